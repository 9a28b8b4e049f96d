/*
 * The result of a turn (include/rein/agent.h): how it ended, the answer, the calls it made
 * with their ledger, and the JSON object `POST /agent/chat` and `rein chat --json` return.
 */
#include "agent_int.h"

#include <string.h>

struct rein_agent_result {
    enum rein_agent_stop stop;
    enum rein_agent_mode mode;
    bool success;
    char *text;
    char *detail;
    char *conversation_id;
    const char *provider; /* the preset's static name */
    char *model;          /* NULL when the provider has none */
    char trace_id[REIN_TRACE_ID_LEN + 1];
    struct call_rec *recs;
    size_t nrecs;
    int64_t in_tokens, out_tokens, latency_ms;
    int model_calls, iterations, tool_calls;
    rein_ledger *ledger;     /* borrowed, or own_ledger */
    rein_ledger *own_ledger; /* taken from the turn */
    json_t *claims;          /* refuted claims of the answer (taken from the turn) */
};

static bool any_pending(const struct turn *t)
{
    for (size_t i = 0; i < t->nrecs; i++) {
        if (!t->recs[i].proposed && rein_call_result_status(t->recs[i].res) == REIN_CALL_PENDING)
            return true;
    }
    return t->own_ledger && rein_ledger_pending_count(t->own_ledger, true, false, 0) > 0;
}

/*
 * Why a turn that stopped well still did not succeed (docs/decisions/0006): it made tool
 * calls and none succeeded, every call was denied, or the rules provider could not route
 * the request. Writes the reason into why and returns true; false when the turn succeeded.
 * A proposed call (propose mode: checked, waiting to run) counts as one that succeeded.
 */
static bool not_a_success(const struct turn *t, char *why, size_t size)
{
    size_t made = 0, ok = 0, denied = 0;
    const rein_call_result *last_failed = NULL;

    if (t->unroutable) {
        snprintf(why, size,
                 "the rules provider could not route the request (no model is "
                 "configured to answer it)");
        return true;
    }
    for (size_t i = 0; i < t->nrecs; i++) {
        const rein_call_result *res = t->recs[i].res;
        if (t->recs[i].proposed) {
            ok++; /* checked and waiting: as good as a propose-mode turn gets */
            continue;
        }
        made++;
        if (rein_call_result_ok(res)) {
            ok++;
        } else {
            last_failed = res;
            denied += rein_call_result_code(res) == REIN_CALL_DENIED;
        }
    }
    if (made == 0 || ok > 0)
        return false;
    if (denied == made)
        snprintf(why, size, "every tool call was denied (%zu of %zu): %.200s", denied, made,
                 rein_call_result_message(last_failed));
    else
        snprintf(why, size, "none of the %zu tool call%s succeeded; the last: %s: %s: %.200s", made,
                 made == 1 ? "" : "s", rein_call_result_tool_name(last_failed),
                 rein_call_code_name(rein_call_result_code(last_failed)),
                 rein_call_result_message(last_failed));
    return true;
}

rein_agent_result *rein__result_from_turn(struct turn *t)
{
    char why[400];
    rein_agent_result *r = rein_calloc(1, sizeof(*r));

    if (!r)
        return NULL;
    r->success = (t->stop == REIN_AGENT_STOP_FINAL_ANSWER ||
                  t->stop == REIN_AGENT_STOP_SUCCESS_CAP || t->stop == REIN_AGENT_STOP_PROPOSED) &&
                 !any_pending(t);
    if (r->success && not_a_success(t, why, sizeof(why))) {
        r->success = false;
        /* The reason goes into meta.detail, ahead of what the turn noted. */
        if ((t->detail.len && rein_buf_adds(&t->detail, "; ") != REIN_OK) ||
            rein_buf_adds(&t->detail, why) != REIN_OK)
            rein_buf_reset(&t->detail);
    }
    r->text = rein_strndup(t->text.ptr, t->text.len);
    r->detail = rein_strndup(t->detail.ptr, t->detail.len);
    if (t->o->conversation_id)
        r->conversation_id = rein_strdup(t->o->conversation_id);
    r->provider = rein_provider_name(t->a->provider);
    if (rein_provider_model(t->a->provider))
        r->model = rein_strdup(rein_provider_model(t->a->provider));
    if (!r->text || !r->detail || (t->o->conversation_id && !r->conversation_id) ||
        (rein_provider_model(t->a->provider) && !r->model)) {
        rein_agent_result_free(r);
        return NULL;
    }
    r->stop = t->stop;
    r->mode = t->o->mode;
    memcpy(r->trace_id, t->trace_id, sizeof(r->trace_id));
    r->in_tokens = atomic_load(&t->in_tokens);
    r->out_tokens = atomic_load(&t->out_tokens);
    r->latency_ms = rein_now_ms() - t->start_ms;
    r->model_calls = t->model_calls;
    r->iterations = t->iterations;
    r->tool_calls = t->tool_calls;
    /* The calls and the turn's own ledger move into the result. */
    r->recs = t->recs;
    r->nrecs = t->nrecs;
    t->recs = NULL;
    t->nrecs = t->recs_cap = 0;
    r->own_ledger = t->own_ledger;
    r->ledger = t->ledger;
    /* The turn's hook (it notes tools in t) must not outlive the turn. */
    if (t->own_ledger)
        rein_ledger_set_hook(t->own_ledger, t->o->persist ? t->o->persist->ledger : NULL,
                             t->o->persist ? t->o->persist->userdata : NULL);
    t->own_ledger = NULL;
    r->claims = t->refuted ? t->refuted : json_array();
    t->refuted = NULL;
    if (!r->claims) {
        rein_agent_result_free(r);
        return NULL;
    }
    return r;
}

void rein_agent_result_free(rein_agent_result *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->nrecs; i++) {
        rein_call_result_free(r->recs[i].res);
        rein_free(r->recs[i].note);
    }
    rein_free(r->recs);
    rein_ledger_free(r->own_ledger);
    json_decref(r->claims);
    rein_free(r->text);
    rein_free(r->detail);
    rein_free(r->conversation_id);
    rein_free(r->model);
    rein_free(r);
}

enum rein_agent_stop rein_agent_result_stop(const rein_agent_result *r)
{
    return r->stop;
}

bool rein_agent_result_success(const rein_agent_result *r)
{
    return r->success;
}

const char *rein_agent_result_text(const rein_agent_result *r)
{
    return r->text;
}

const char *rein_agent_result_detail(const rein_agent_result *r)
{
    return r->detail;
}

const char *rein_agent_result_trace_id(const rein_agent_result *r)
{
    return r->trace_id;
}

size_t rein_agent_result_tool_call_count(const rein_agent_result *r)
{
    return (size_t)r->tool_calls;
}

int64_t rein_agent_result_input_tokens(const rein_agent_result *r)
{
    return r->in_tokens;
}

int64_t rein_agent_result_output_tokens(const rein_agent_result *r)
{
    return r->out_tokens;
}

int64_t rein_agent_result_latency_ms(const rein_agent_result *r)
{
    return r->latency_ms;
}

int rein_agent_result_model_calls(const rein_agent_result *r)
{
    return r->model_calls;
}

int rein_agent_result_iterations(const rein_agent_result *r)
{
    return r->iterations;
}

rein_ledger *rein_agent_result_ledger(const rein_agent_result *r)
{
    return r->ledger;
}

/* ---- JSON ---- */

static void write_call(struct rein_jw *w, const struct call_rec *c)
{
    rein_call_result *res = c->res;
    const json_t *args = rein_call_result_args(res);
    size_t len = 0;
    const char *text;

    rein_jw_obj_begin(w);
    REIN_JW_KEY(w, "call_id");
    rein_jw_str(w, rein_call_result_call_id(res));
    REIN_JW_KEY(w, "tool");
    rein_jw_str(w, rein_call_result_tool_name(res));
    REIN_JW_KEY(w, "sent_name");
    text = rein_call_result_sent_name(res, &len);
    rein_jw_strn(w, text, len);
    REIN_JW_KEY(w, "arguments");
    if (args) {
        rein_jw_json(w, args);
    } else if ((text = rein_call_result_args_text(res, &len)) != NULL) {
        rein_jw_strn(w, text, len);
    } else {
        rein_jw_obj_begin(w);
        rein_jw_obj_end(w);
    }
    REIN_JW_KEY(w, "status");
    rein_jw_str(w, c->proposed ? "proposed" : rein_call_status_name(rein_call_result_status(res)));
    REIN_JW_KEY(w, "result");
    /* The normalized result, as every other path shows a call (tools.h), written straight from
     * the result: its tree was made only to be written here (issue 25). Every reader of this
     * text parses it or keeps it only in the form rein_json_dump writes
     * (rein_agent_result_json_text), so the bytes are the tree's either way. */
    if (c->proposed)
        rein_jw_null(w);
    else
        rein_call_result_write(res, w);
    REIN_JW_KEY(w, "latency_ms");
    rein_jw_int(w, rein_call_result_latency_ms(res));
    REIN_JW_KEY(w, "iteration");
    rein_jw_int(w, c->iteration);
    if (c->verified) {
        REIN_JW_KEY(w, "verification");
        rein_jw_obj_begin(w);
        REIN_JW_KEY(w, "passed");
        rein_jw_bool(w, c->verify_passed);
        REIN_JW_KEY(w, "reason");
        rein_jw_str(w, c->note ? c->note : "");
        rein_jw_obj_end(w);
    }
    if (c->asked) {
        REIN_JW_KEY(w, "approval");
        rein_jw_obj_begin(w);
        REIN_JW_KEY(w, "approved");
        rein_jw_bool(w, c->approved);
        REIN_JW_KEY(w, "reason");
        rein_jw_str(w, c->note ? c->note : "");
        rein_jw_obj_end(w);
    }
    rein_jw_obj_end(w);
}

static void write_calls(struct rein_jw *w, const rein_agent_result *r)
{
    rein_jw_arr_begin(w);
    for (size_t i = 0; i < r->nrecs; i++)
        write_call(w, &r->recs[i]);
    rein_jw_arr_end(w);
}

static json_t *parse_written(struct rein_buf *b, const struct rein_jw *w)
{
    json_t *j = NULL;

    if (rein_jw_finish(w) == REIN_OK)
        j = rein_json_parse(b->ptr, b->len, 0, NULL);
    rein_buf_release(b);
    return j;
}

const json_t *rein_agent_result_claims(const rein_agent_result *r)
{
    return r->claims;
}

json_t *rein_agent_result_tool_calls_json(const rein_agent_result *r)
{
    struct rein_buf b;
    struct rein_jw w;

    rein_buf_init(&b, 0);
    rein_jw_init(&w, &b);
    write_calls(&w, r);
    return parse_written(&b, &w);
}

static void write_result(struct rein_jw *w, const rein_agent_result *r)
{
    rein_jw_obj_begin(w);
    REIN_JW_KEY(w, "success");
    rein_jw_bool(w, r->success);
    REIN_JW_KEY(w, "response");
    rein_jw_str(w, r->text);
    REIN_JW_KEY(w, "conversation_id");
    rein_jw_str(w, r->conversation_id);
    REIN_JW_KEY(w, "trace_id");
    rein_jw_str(w, r->trace_id);
    REIN_JW_KEY(w, "tool_calls");
    write_calls(w, r);
    REIN_JW_KEY(w, "meta");
    rein_jw_obj_begin(w);
    REIN_JW_KEY(w, "total_tokens");
    rein_jw_int(w, r->in_tokens + r->out_tokens);
    REIN_JW_KEY(w, "input_tokens");
    rein_jw_int(w, r->in_tokens);
    REIN_JW_KEY(w, "output_tokens");
    rein_jw_int(w, r->out_tokens);
    REIN_JW_KEY(w, "tool_calls_count");
    rein_jw_int(w, r->tool_calls);
    REIN_JW_KEY(w, "latency_ms");
    rein_jw_int(w, r->latency_ms);
    REIN_JW_KEY(w, "stop_reason");
    rein_jw_str(w, rein_agent_stop_name(r->stop));
    REIN_JW_KEY(w, "iterations");
    rein_jw_int(w, r->iterations);
    REIN_JW_KEY(w, "model_calls");
    rein_jw_int(w, r->model_calls);
    REIN_JW_KEY(w, "mode");
    rein_jw_str(w, rein_agent_mode_name(r->mode));
    REIN_JW_KEY(w, "provider");
    rein_jw_str(w, r->provider);
    REIN_JW_KEY(w, "model");
    rein_jw_str(w, r->model);
    if (r->detail[0]) {
        REIN_JW_KEY(w, "detail");
        rein_jw_str(w, r->detail);
    }
    REIN_JW_KEY(w, "claims");
    rein_jw_json(w, r->claims);
    rein_jw_obj_end(w);
    rein_jw_obj_end(w);
}

json_t *rein_agent_result_json(const rein_agent_result *r)
{
    struct rein_buf b;
    struct rein_jw w;

    rein_buf_init(&b, 0);
    rein_jw_init(&w, &b);
    write_result(&w, r);
    return parse_written(&b, &w);
}

/* The writer's text is kept when it is already what rein_json_dump() writes of its parse
 * (rein_json_is_written_form: nearly always); otherwise it takes that path, so the bytes are
 * the same either way. A turn used to parse its result into a tree only to write it out again
 * (issue 25). */
rein_err rein_agent_result_json_text(const rein_agent_result *r, struct rein_buf *out)
{
    struct rein_jw w;
    size_t start;
    json_t *j;
    rein_err rc;

    if (!r || !out)
        return REIN_EINVAL;
    start = out->len;
    rein_jw_init(&w, out);
    write_result(&w, r);
    rc = rein_jw_finish(&w);
    if (rc == REIN_OK && rein_json_is_written_form(out->ptr + start, out->len - start))
        return REIN_OK;
    j = rc == REIN_OK ? rein_json_parse(out->ptr + start, out->len - start, 0, NULL) : NULL;
    rein_buf_truncate(out, start);
    if (!j)
        return rc != REIN_OK ? rc : REIN_EPARSE;
    rc = rein_json_dump(out, j);
    json_decref(j);
    if (rc != REIN_OK)
        rein_buf_truncate(out, start);
    return rc;
}
