/*
 * Asking the LLM judge (layer 5 of docs/DESIGN.md [verification]) for its verdict on a change.
 *
 * The judge is one model conversation of its own: a short system prompt, the seed's prompt
 * (requirement, diff, criteria, reply format) and one tool, "verdict", whose parameters are
 * the verdict schema, named in tool_choice. The model's arguments are not checked here: they
 * go through rein_call_run() with a registry that holds only that tool, so name repair,
 * argument parsing and preflight are exactly what every tool call gets, and a reply that
 * fails gets the pipeline's invalid payload back, as any model would. A reply in text (some
 * models ignore tool_choice) is read as the verdict's arguments and takes the same path.
 * One invalid reply is fed back; after max_attempts replies without a valid verdict, or when
 * the model cannot be asked, the verdict is UNVERIFIABLE with the reason.
 */
#include "verify_int.h"

#include <rein/tools.h>

#include <string.h>

#define DEFAULT_ATTEMPTS   2
#define DEFAULT_DIFF_BYTES ((size_t)64 << 10)
#define DEFAULT_MAX_TOKENS 2048
#define REASON_MAX         2000

struct rein_verify_judge_result {
    enum rein_verify_judge_verdict verdict;
    json_t *reply;  /* the conforming verdict, or NULL */
    json_t *errors; /* [{path, message}] of the last invalid reply; [] when none */
    char *reason;   /* the reasoning, or why UNVERIFIABLE */
    double confidence;
    int attempts;
    int64_t input_tokens, output_tokens;
};

static const char judge_system[] =
    "You are a strict and fair code reviewer. You judge whether a code change implements a "
    "requirement, and you do not write code. Give your verdict by calling the verdict tool "
    "exactly once; its arguments are the JSON object the task describes. Use NEEDS_REVIEW "
    "when a person must look before the change can be accepted (security, data loss, an "
    "unclear requirement), FAIL when the change does not do what was asked or breaks "
    "something, PASS otherwise.";

static const char verdict_description[] =
    "Record your verdict on the code change: functionality and quality scores (0-10), the "
    "risks you see, PASS, FAIL or NEEDS_REVIEW, your reasoning, and optionally your "
    "confidence (0-1).";

void rein_verify_judge_result_free(rein_verify_judge_result *r)
{
    if (!r)
        return;
    json_decref(r->reply);
    json_decref(r->errors);
    rein_free(r->reason);
    rein_free(r);
}

enum rein_verify_judge_verdict rein_verify_judge_result_verdict(const rein_verify_judge_result *r)
{
    return r->verdict;
}

const json_t *rein_verify_judge_result_reply(const rein_verify_judge_result *r)
{
    return r->reply;
}

const char *rein_verify_judge_result_reason(const rein_verify_judge_result *r)
{
    return r->reason ? r->reason : "";
}

double rein_verify_judge_result_confidence(const rein_verify_judge_result *r)
{
    return r->confidence;
}

int rein_verify_judge_result_attempts(const rein_verify_judge_result *r)
{
    return r->attempts;
}

json_t *rein_verify_judge_result_json(const rein_verify_judge_result *r)
{
    json_t *o = json_object();

    if (!o ||
        json_object_set_new(o, "verdict",
                            json_string(rein_verify_judge_verdict_name(r->verdict))) ||
        json_object_set_new(o, "reply", r->reply ? json_deep_copy(r->reply) : json_null()) ||
        json_object_set_new(o, "reason", rein__verify_jstr(rein_verify_judge_result_reason(r))) ||
        json_object_set_new(o, "confidence", json_real(r->confidence)) ||
        json_object_set_new(o, "attempts", json_integer(r->attempts)) ||
        json_object_set_new(o, "errors", r->errors ? json_deep_copy(r->errors) : json_array()) ||
        json_object_set_new(o, "input_tokens", json_integer(r->input_tokens)) ||
        json_object_set_new(o, "output_tokens", json_integer(r->output_tokens))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* ---- the verdict tool ---- */

/* The verdict tool only hands its (validated) arguments back: they are the verdict. */
static rein_err verdict_tool(void *ud, const struct rein_invocation *inv,
                             struct rein_tool_reply *reply, rein_error *err)
{
    (void)ud;
    (void)err;
    reply->output = json_incref(inv->args);
    return REIN_OK;
}

static rein_registry *tool_registry(const char *tool, const char *description, json_t *schema,
                                    rein_error *err)
{
    rein_registry *reg = rein_registry_new(err);
    json_t *m;

    if (!reg)
        return NULL;
    m = json_pack("{s:s, s:s, s:O}", "id", tool, "description", description, "parameters", schema);
    if (!m) {
        rein_registry_free(reg);
        rein_error_set(err, REIN_ENOMEM, "out of memory");
        return NULL;
    }
    if (rein_registry_add_builtin(reg, m, verdict_tool, NULL, NULL, err) != REIN_OK) {
        json_decref(m);
        rein_registry_free(reg);
        return NULL;
    }
    json_decref(m);
    return reg;
}

/* ---- the conversation ---- */

struct judge {
    rein_provider *p;
    const struct rein_verify_judge_opts *o;
    const struct rein__verify_ask *ask;
    rein_registry *reg;
    rein_model_request *req;
    rein_history *h;
    rein_verify_judge_result *r;
};

/* The seed's prompt around the diff, cut at a line when it is too long. New; NULL on ENOMEM. */
static char *user_prompt(const char *requirement, const char *diff, size_t max,
                         const char *instructions)
{
    size_t len = diff ? strlen(diff) : 0, keep;
    char *cut = NULL, *prompt, *out;

    if (len > max) {
        keep = max;
        while (keep > 0 && diff[keep - 1] != '\n')
            keep--;
        if (keep == 0)
            keep = max; /* one enormous line: cut it anyway, UTF-8 fixed below */
        cut =
            rein_asprintf("%.*s\n… (diff cut: %zu of %zu bytes shown)", (int)keep, diff, keep, len);
        if (!cut)
            return NULL;
        rein__verify_utf8_fix(cut, strlen(cut));
    }
    prompt = rein_verify_judge_prompt(requirement, len == 0 ? "(no diff is available)"
                                                   : cut    ? cut
                                                            : diff);
    rein_free(cut);
    if (!prompt)
        return NULL;
    out = rein_asprintf("%s\nSend that object as the arguments of one call to the verdict "
                        "tool.%s%s\n",
                        prompt, instructions ? "\n\n## Project rules\n" : "",
                        instructions ? instructions : "");
    rein_free(prompt);
    return out;
}

static rein_err setup(struct judge *j, rein_error *err)
{
    const struct rein__verify_ask *a = j->ask;
    rein_err rc = REIN_ENOMEM;

    j->reg = tool_registry(a->tool, a->description, a->schema, err);
    if (!j->reg)
        return err && err->code ? err->code : REIN_ENOMEM;
    j->req = rein_model_request_new();
    j->h = rein_history_new();
    if (!j->req || !j->h ||
        rein_model_request_add_tool(j->req, a->tool, a->description, a->schema) ||
        rein_model_request_set_tool_choice(j->req, a->tool) ||
        rein_history_add_system(j->h, a->system) || rein_history_add_user(j->h, a->prompt))
        goto out;
    rein_model_request_set_max_tokens(j->req,
                                      j->o->max_tokens > 0 ? j->o->max_tokens : DEFAULT_MAX_TOKENS);
    rein_model_request_set_cancel(j->req, j->o->cancel);
    rc = REIN_OK;
out:
    if (rc)
        rein_error_set(err, rc, "out of memory");
    return rc;
}

/* Keeps the errors of an invalid payload (borrowed) as the result's last errors. */
static rein_err keep_errors(struct judge *j, const json_t *payload)
{
    const json_t *errors = json_object_get(payload, "errors");
    json_t *copy = json_is_array(errors) ? json_deep_copy(errors) : json_array();

    if (!copy)
        return REIN_ENOMEM;
    json_decref(j->r->errors);
    j->r->errors = copy;
    return REIN_OK;
}

/*
 * One call through the pipeline. On success the verdict is taken into the result; otherwise
 * *payload gets the text the model reads (new). REIN_ECANCELED, REIN_ENOMEM.
 */
static rein_err run_call(struct judge *j, const char *id, const char *name, const char *args,
                         char **payload, bool *ok, rein_error *err)
{
    struct rein_call_input in = {
        .call_id = id, .name = name, .args_text = args, .args_len = strlen(args)};
    struct rein_call_opts co = {.cancel = j->o->cancel};
    rein_call_result *res = NULL;
    const json_t *model;
    rein_err rc;

    *payload = NULL;
    rc = rein_call_run(j->reg, &in, &co, &res, err);
    if (rc)
        return rc;
    *ok = rein_call_result_ok(res);
    if (*ok && !j->r->reply) {
        j->r->reply = json_incref((json_t *)rein_call_result_output(res));
        *payload = rein_asprintf("{\"ok\":true,\"message\":\"%s recorded\"}", j->ask->tool);
    } else if (rein_call_result_code(res) == REIN_CALL_CANCELLED) {
        rc = rein_error_set(err, REIN_ECANCELED, "the judge was cancelled");
    } else {
        model = rein_call_result_model_json(res);
        *payload = model ? rein_json_dumps(model) : NULL;
        if (!rein_call_result_ok(res) && model && keep_errors(j, model))
            rc = REIN_ENOMEM;
    }
    if (!rc && !*payload)
        rc = REIN_ENOMEM;
    if (rc == REIN_ENOMEM)
        rein_error_set(err, rc, "out of memory");
    rein_call_result_free(res);
    return rc;
}

/*
 * The assistant message of resp with every call named "verdict", the one tool offered: a
 * name the services would refuse when it is sent back ("⚙", "functions.verdict") must not
 * break the next request; the invalid payload still quotes the name the model used.
 */
static rein_err add_reply(struct judge *j, const rein_model_response *resp, rein_error *err)
{
    json_t *msg = rein_model_response_message(resp), *call;
    size_t i;
    rein_err rc;

    if (!msg)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    json_array_foreach(json_object_get(msg, "tool_calls"), i, call)
    {
        if (json_object_set_new(call, "name", json_string(j->ask->tool))) {
            json_decref(msg);
            return rein_error_set(err, REIN_ENOMEM, "out of memory");
        }
    }
    rc = rein_history_append(j->h, msg, err);
    json_decref(msg);
    return rc;
}

/* The tool calls of one reply, each answered in the history. */
static rein_err answer_calls(struct judge *j, const rein_model_response *resp, rein_error *err)
{
    for (size_t i = 0; i < rein_model_response_call_count(resp); i++) {
        const rein_model_call *c = rein_model_response_call(resp, i);
        char *payload = NULL;
        bool ok = false;
        rein_err rc = run_call(j, rein_model_call_id(c), rein_model_call_name(c),
                               rein_model_call_raw_arguments(c), &payload, &ok, err);
        if (rc == REIN_OK)
            rc = rein_history_add_tool_result(j->h, rein_model_call_id(c), j->ask->tool, payload,
                                              !ok);
        rein_free(payload);
        if (rc)
            return rc;
    }
    return REIN_OK;
}

/* A reply without tool calls: its JSON object (or the whole text) as the arguments. */
static rein_err answer_text(struct judge *j, const rein_model_response *resp, rein_error *err)
{
    const char *text = rein_model_response_text(resp);
    size_t start = 0, end = strlen(text);
    char *args, *payload = NULL, *msg;
    bool ok = false;
    rein_err rc;

    if (rein__verify_judge_find_object(text, end, &start, &end) == false) {
        start = 0;
        end = strlen(text);
    }
    args = rein_strndup(text + start, end - start);
    if (!args)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    rc = run_call(j, NULL, j->ask->tool, args, &payload, &ok, err);
    rein_free(args);
    if (rc || j->r->reply) {
        rein_free(payload);
        return rc;
    }
    msg = rein_asprintf("Your reply is not a valid %s. What rein's tool-call pipeline "
                        "found:\n%s\nCall the %s tool with corrected arguments.",
                        j->ask->what, payload, j->ask->tool);
    rein_free(payload);
    if (!msg)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    rc = rein_history_add_user(j->h, msg);
    rein_free(msg);
    return rc ? rein_error_set(err, rc, "out of memory") : REIN_OK;
}

/* "…: /verdict: must be one of …; /: required property …" from the last errors. */
static char *unverifiable_reason(const struct judge *j)
{
    struct rein_buf b;
    const json_t *e;
    size_t i;
    char *out;

    rein_buf_init(&b, REASON_MAX);
    if (rein_buf_addf(&b, "no valid %s after %d repl%s", j->ask->what, j->r->attempts,
                      j->r->attempts == 1 ? "y" : "ies"))
        goto out;
    json_array_foreach(j->r->errors, i, e)
    {
        if (rein_buf_addf(&b, "%s%s: %s", i ? "; " : ": ",
                          json_string_value(json_object_get(e, "path")),
                          json_string_value(json_object_get(e, "message"))))
            break;
    }
out:
    out = rein_buf_detach(&b, NULL);
    rein_buf_release(&b);
    return out;
}

static rein_err converse(struct judge *j, rein_error *err)
{
    int max = j->o->max_attempts > 0 ? j->o->max_attempts : DEFAULT_ATTEMPTS;
    rein_err rc = REIN_OK;

    while (!j->r->reply && j->r->attempts < max) {
        rein_model_response *resp = NULL;
        rein_error perr;

        rc = rein_provider_send(j->p, j->req, j->h, &resp, &perr);
        if (resp) {
            int64_t in = rein_model_response_input_tokens(resp);
            int64_t out = rein_model_response_output_tokens(resp);
            j->r->input_tokens += in > 0 ? in : 0;
            j->r->output_tokens += out > 0 ? out : 0;
        }
        if (rc) {
            rein_model_response_free(resp);
            if (rc == REIN_ECANCELED || rc == REIN_ENOMEM)
                return rein_error_set(err, rc, "%s", perr.msg);
            j->r->reason = rein_asprintf("the judge could not be asked: %s", perr.msg);
            return j->r->reason ? REIN_OK : rein_error_set(err, REIN_ENOMEM, "out of memory");
        }
        j->r->attempts++;
        rc = add_reply(j, resp, err);
        if (!rc)
            rc = rein_model_response_call_count(resp) ? answer_calls(j, resp, err)
                                                      : answer_text(j, resp, err);
        rein_model_response_free(resp);
        if (rc)
            return rc;
    }
    if (!j->r->reply) {
        j->r->reason = unverifiable_reason(j);
        return j->r->reason ? REIN_OK : rein_error_set(err, REIN_ENOMEM, "out of memory");
    }
    return REIN_OK;
}

/* Runs one conversation for a's tool; r (new) holds the reply or why there is none. */
static rein_err ask_run(rein_provider *p, const struct rein__verify_ask *a,
                        rein_verify_judge_result **out, rein_error *err)
{
    static const struct rein_verify_judge_opts defaults = {0};
    struct judge j = {.p = p, .o = a->opts ? a->opts : &defaults, .ask = a};
    rein_err rc;

    *out = NULL;
    j.r = rein_calloc(1, sizeof(*j.r));
    if (!j.r)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    j.r->verdict = REIN_VERIFY_JUDGE_UNVERIFIABLE;
    rc = setup(&j, err);
    if (!rc)
        rc = converse(&j, err);
    if (!rc && !j.r->errors && !(j.r->errors = json_array()))
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
    rein_history_free(j.h);
    rein_model_request_free(j.req);
    rein_registry_free(j.reg);
    if (rc) {
        rein_verify_judge_result_free(j.r);
        return rc;
    }
    *out = j.r;
    return REIN_OK;
}

rein_err rein__verify_ask_run(rein_provider *p, const struct rein__verify_ask *a, json_t **reply,
                              char **reason, rein_error *err)
{
    rein_verify_judge_result *r = NULL;
    rein_err rc = ask_run(p, a, &r, err);

    *reply = NULL;
    *reason = NULL;
    if (rc)
        return rc;
    *reply = r->reply ? json_incref(r->reply) : NULL;
    *reason = rein_strdup(r->reason ? r->reason : "");
    rein_verify_judge_result_free(r);
    if (!*reason) {
        json_decref(*reply);
        *reply = NULL;
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    }
    return REIN_OK;
}

rein_err rein_verify_judge_run(rein_provider *p, const char *requirement, const char *diff,
                               const struct rein_verify_judge_opts *opts,
                               rein_verify_judge_result **out, rein_error *err)
{
    static const struct rein_verify_judge_opts defaults = {0};
    const struct rein_verify_judge_opts *o = opts ? opts : &defaults;
    struct rein__verify_ask a = {.system = judge_system,
                                 .tool = "verdict",
                                 .what = "verdict",
                                 .description = verdict_description,
                                 .opts = opts};
    const char *reasoning;
    char *prompt;
    rein_err rc;

    if (out)
        *out = NULL;
    if (!p || !requirement || !out)
        return rein_error_set(err, REIN_EINVAL, "the judge needs a provider and a requirement");
    a.schema = rein__verify_judge_schema_json(err);
    if (!a.schema)
        return err && err->code ? err->code : REIN_ENOMEM;
    prompt =
        user_prompt(requirement, diff, o->max_diff_bytes ? o->max_diff_bytes : DEFAULT_DIFF_BYTES,
                    o->instructions);
    if (!prompt) {
        json_decref(a.schema);
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    }
    a.prompt = prompt;
    rc = ask_run(p, &a, out, err);
    rein_free(prompt);
    json_decref(a.schema);
    if (rc)
        return rc;
    if ((*out)->reply) {
        (*out)->verdict = rein_verify_judge_verdict((*out)->reply);
        (*out)->confidence = rein_verify_judge_confidence((*out)->reply);
        reasoning = json_string_value(json_object_get((*out)->reply, "reasoning"));
        rein_free((*out)->reason);
        (*out)->reason = rein_strdup(reasoning ? reasoning : "");
        if (!(*out)->reason) {
            rein_verify_judge_result_free(*out);
            *out = NULL;
            return rein_error_set(err, REIN_ENOMEM, "out of memory");
        }
    }
    return REIN_OK;
}
