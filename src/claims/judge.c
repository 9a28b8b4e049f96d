/*
 * The optional model stage of claim extraction (`rein verify --claims-judge`): a model lists
 * the claims of a text, and rein checks every one it lists like the ones it found itself.
 *
 * The model gets the text and one tool, "report_claims", named in tool_choice. Its arguments
 * are not trusted: they run through rein_call_run() with a registry that holds only that tool,
 * so they are parsed and validated against the tool's JSON Schema like any tool call, and an
 * invalid call gets the pipeline's invalid payload back (at most max_attempts replies). A
 * reply in text is read as the arguments and takes the same path. What the model says about
 * the claims' truth is never used: only the list.
 */
#include "claims_int.h"

#include <string.h>

#define DEFAULT_ATTEMPTS   2
#define DEFAULT_MAX_TOKENS 2048
#define TEXT_MAX           ((size_t)64 << 10)

static const char schema_text[] =
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"claims\"],"
    "\"properties\":{\"claims\":{\"type\":\"array\",\"maxItems\":200,\"items\":{"
    "\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"kind\",\"text\"],"
    "\"properties\":{"
    "\"kind\":{\"enum\":[\"tool\",\"file_written\",\"file_deleted\",\"function\","
    "\"tests_pass\",\"build_passes\",\"lint_clean\",\"no_type_errors\"]},"
    "\"text\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":2000},"
    "\"tool\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":64},"
    "\"path\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":1024},"
    "\"function\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":256}}}}}}";

static const char system_text[] =
    "You read an AI agent's answer and list every claim in it that something was done: that "
    "a tool ran or produced something (kind tool, with the tool's name), that a file was "
    "written, created, saved, exported or updated (file_written, with its path), that a file "
    "was deleted (file_deleted, with its path), that a function was added or implemented "
    "(function, with its name and the file when given), or that tests, the build, lint or "
    "type checks pass (tests_pass, build_passes, lint_clean, no_type_errors). Plans, offers, "
    "questions, conditions, instructions to the user, negated statements, failures and "
    "general descriptions of a tool are not claims. Copy each claim's sentence into text. Do "
    "not judge whether a claim is true. Call report_claims exactly once.";

static const char tool_description[] =
    "Report the claims of the answer: [{kind, text, tool?, path?, function?}]. An empty list "
    "when it claims nothing.";

const char *rein_claims_judge_schema(void)
{
    return schema_text;
}

/* The tool only hands its validated arguments back. */
static rein_err report_tool(void *ud, const struct rein_invocation *inv,
                            struct rein_tool_reply *reply, rein_error *err)
{
    (void)ud;
    (void)err;
    reply->output = json_incref(inv->args);
    return REIN_OK;
}

struct judge {
    rein_provider *p;
    rein_registry *reg;
    rein_model_request *req;
    rein_history *h;
    json_t *args; /* the valid arguments, once there are some */
    char why[300];
};

static rein_err setup(struct judge *j, const char *text, size_t len,
                      const struct rein_claims_judge_opts *o, rein_error *err)
{
    json_t *schema = json_loads(schema_text, 0, NULL), *m = NULL;
    char *prompt = NULL;
    rein_err rc = REIN_ENOMEM;

    if (len > TEXT_MAX)
        len = TEXT_MAX;
    while (len && ((unsigned char)text[len] & 0xc0) == 0x80 && len < TEXT_MAX)
        len--;
    j->reg = rein_registry_new(err);
    if (!schema || !j->reg)
        goto out;
    m = json_pack("{s:s, s:s, s:O}", "id", "report_claims", "description", tool_description,
                  "parameters", schema);
    if (!m)
        goto out;
    rc = rein_registry_add_builtin(j->reg, m, report_tool, NULL, NULL, err);
    if (rc)
        goto out;
    rc = REIN_ENOMEM;
    j->req = rein_model_request_new();
    j->h = rein_history_new();
    prompt = rein_asprintf("The agent's answer:\n\"\"\"\n%.*s\n\"\"\"\nList its claims with one "
                           "call to report_claims.",
                           (int)len, text);
    if (!j->req || !j->h || !prompt ||
        rein_model_request_add_tool(j->req, "report_claims", tool_description, schema) ||
        rein_model_request_set_tool_choice(j->req, "report_claims") ||
        rein_history_add_system(j->h, system_text) || rein_history_add_user(j->h, prompt))
        goto out;
    rein_model_request_set_max_tokens(j->req,
                                      o->max_tokens > 0 ? o->max_tokens : DEFAULT_MAX_TOKENS);
    rc = REIN_OK;
out:
    json_decref(schema);
    json_decref(m);
    rein_free(prompt);
    if (rc == REIN_ENOMEM)
        rein_error_set(err, rc, "out of memory");
    return rc;
}

/* One call through the pipeline: the arguments are kept when valid; *payload (new) is what
 * goes back to the model. */
static rein_err run_call(struct judge *j, const char *id, const char *args, char **payload,
                         bool *ok, rein_error *err)
{
    struct rein_call_input in = {
        .call_id = id, .name = "report_claims", .args_text = args, .args_len = strlen(args)};
    rein_call_result *res = NULL;
    const json_t *model;
    rein_err rc = rein_call_run(j->reg, &in, NULL, &res, err);

    *payload = NULL;
    if (rc)
        return rc;
    *ok = rein_call_result_ok(res);
    if (*ok) {
        j->args = json_incref((json_t *)rein_call_result_output(res));
        *payload = rein_strdup("{\"ok\":true}");
    } else {
        model = rein_call_result_model_json(res);
        *payload = model ? rein_json_dumps(model) : NULL;
        snprintf(j->why, sizeof(j->why), "%s", rein_call_result_message(res));
    }
    rein_call_result_free(res);
    return *payload ? REIN_OK : rein_error_set(err, REIN_ENOMEM, "out of memory");
}

/* The reply into the history, its calls answered (a text reply is read as the arguments). */
static rein_err answer(struct judge *j, const rein_model_response *resp, rein_error *err)
{
    size_t n = rein_model_response_call_count(resp);
    rein_err rc = rein_history_add_response(j->h, resp);

    if (rc)
        return rein_error_set(err, rc, "out of memory");
    for (size_t i = 0; i < n && !rc; i++) {
        const rein_model_call *c = rein_model_response_call(resp, i);
        char *payload = NULL;
        bool ok = false;
        rc = run_call(j, rein_model_call_id(c), rein_model_call_raw_arguments(c), &payload, &ok,
                      err);
        if (!rc && rein_history_add_tool_result(j->h, rein_model_call_id(c), "report_claims",
                                                payload, !ok))
            rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
        rein_free(payload);
    }
    if (!rc && n == 0) {
        const char *text = rein_model_response_text(resp);
        const char *a = strchr(text, '{'), *b = strrchr(text, '}');
        char *args = a && b && b > a ? rein_strndup(a, (size_t)(b - a) + 1) : rein_strdup(text);
        char *payload = NULL, *msg;
        bool ok = false;
        if (!args)
            return rein_error_set(err, REIN_ENOMEM, "out of memory");
        rc = run_call(j, NULL, args, &payload, &ok, err);
        rein_free(args);
        if (!rc && !ok) {
            msg = rein_asprintf("That is not a valid claim list: %s\nCall report_claims with "
                                "corrected arguments.",
                                payload);
            rc = !msg || rein_history_add_user(j->h, msg) ? REIN_ENOMEM : REIN_OK;
            rein_free(msg);
        }
        rein_free(payload);
    }
    return rc;
}

static rein_err add_listed(const json_t *args, rein_claims *claims, size_t *listed)
{
    size_t i, before = rein_claims_count(claims);
    const json_t *c;

    json_array_foreach(json_object_get(args, "claims"), i, c)
    {
        enum rein_claim_kind kind;
        const char *tool = json_string_value(json_object_get(c, "tool"));
        const char *path = json_string_value(json_object_get(c, "path"));
        const char *fn = json_string_value(json_object_get(c, "function"));
        rein_err rc;
        if (!rein_claim_kind_parse(json_string_value(json_object_get(c, "kind")), &kind))
            continue; /* the schema allows only known kinds */
        /* a claim without what it is about cannot be checked: it is not added */
        if ((kind == REIN_CLAIM_TOOL && !tool) ||
            ((kind == REIN_CLAIM_FILE_WRITTEN || kind == REIN_CLAIM_FILE_DELETED) && !path) ||
            (kind == REIN_CLAIM_FUNCTION && !fn))
            continue;
        rc = rein_claims_add(claims, kind, json_string_value(json_object_get(c, "text")),
                             kind == REIN_CLAIM_TOOL ? tool : NULL,
                             kind == REIN_CLAIM_TOOL ? NULL : path,
                             kind == REIN_CLAIM_FUNCTION ? fn : NULL);
        if (rc)
            return rc;
    }
    if (listed)
        *listed = rein_claims_count(claims) - before;
    return REIN_OK;
}

rein_err rein_claims_judge(rein_provider *p, const char *text, size_t len,
                           const struct rein_claims_judge_opts *opts, rein_claims *claims,
                           size_t *listed, rein_error *err)
{
    static const struct rein_claims_judge_opts defaults;
    const struct rein_claims_judge_opts *o = opts ? opts : &defaults;
    struct judge j = {.p = p};
    int max = o->max_attempts > 0 ? o->max_attempts : DEFAULT_ATTEMPTS, attempts = 0;
    rein_err rc;

    if (listed)
        *listed = 0;
    if (!p || !claims || (!text && len))
        return rein_error_set(err, REIN_EINVAL, "the claims judge needs a model and a text");
    rc = setup(&j, text ? text : "", text ? len : 0, o, err);
    while (!rc && !j.args && attempts < max) {
        rein_model_response *resp = NULL;
        rein_error perr;
        rein_err sent = rein_provider_send(p, j.req, j.h, &resp, &perr);
        attempts++;
        if (sent) {
            rein_model_response_free(resp);
            rc = sent == REIN_ENOMEM
                     ? rein_error_set(err, sent, "out of memory")
                     : rein_error_set(err, REIN_EPROVIDER,
                                      "the claims judge could not be asked: %s", perr.msg);
            break;
        }
        rc = answer(&j, resp, err);
        rein_model_response_free(resp);
    }
    if (!rc && !j.args)
        rc = rein_error_set(err, REIN_EPROVIDER,
                            "the claims judge gave no valid claim list in %d repl%s%s%s", attempts,
                            attempts == 1 ? "y" : "ies", j.why[0] ? ": " : "", j.why);
    if (!rc && add_listed(j.args, claims, listed))
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
    json_decref(j.args);
    rein_history_free(j.h);
    rein_model_request_free(j.req);
    rein_registry_free(j.reg);
    return rc;
}
