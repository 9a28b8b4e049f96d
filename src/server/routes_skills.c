/*
 * The skill host (rein_server_add_skill_routes in include/rein/server.h): the registry's
 * manifests, and POST /skills/{id}/invoke, which runs one call through the call pipeline
 * (rein_call_run) like every other caller, so an HTTP client gets the same name check,
 * preflight, policy, timeout and normalized result as a model or an MCP client.
 *
 * The skill id in the path names a resource: an unknown id is 404 before the pipeline runs.
 * Everything the pipeline decides is a 200 with the normalized result, "ok" saying how the
 * call went (decision 0008): the HTTP status says whether the request could be served, the
 * body whether the call succeeded, exactly as the result would read in a ledger or a model's
 * tool message. This is the route benchmarked against FastAPI and nginx (bench/server.sh): the
 * answer is written with the pipeline's own JSON writer, not through a jansson tree, and quick
 * built-in tools run on the network thread (runs_inline below).
 */
#include "server/server_int.h"

#include <string.h>

#define INLINE_MAX_TIMEOUT_MS 1000

struct skills_ctx {
    const rein_registry *reg;
    rein_metrics *metrics;
};

static void list_skills(rein_request *req, void *userdata)
{
    const struct skills_ctx *c = userdata;
    json_t *o = json_object();

    if (!o || json_object_set_new(o, "skills", rein_registry_manifests_json(c->reg)) ||
        json_object_set(o, "problems", (json_t *)rein_registry_problems(c->reg))) {
        json_decref(o);
        rein_request_reply_error(req, 500, "internal", "out of memory");
        return;
    }
    rein_request_reply_json(req, 200, o);
}

/* 404 for an unknown skill, naming the ones there are. */
static void reply_unknown(rein_request *req, const struct skills_ctx *c, const char *id)
{
    json_t *extra = json_object();
    char msg[200];

    snprintf(msg, sizeof(msg), "there is no skill \"%.64s\" (GET /skills lists them)", id);
    if (!extra || json_object_set_new(extra, "available_tools", rein_registry_names_json(c->reg))) {
        json_decref(extra);
        rein_request_reply_error(req, 404, "not_found", "%s", msg);
        return;
    }
    rein__request_reply_error_extra(req, 404, "not_found", msg, extra);
    json_decref(extra);
}

static void get_skill(rein_request *req, void *userdata)
{
    const struct skills_ctx *c = userdata;
    const char *id = rein_request_param(req, "id");
    const rein_tool *tool = rein_registry_get(c->reg, id);

    if (!tool) {
        reply_unknown(req, c, id);
        return;
    }
    rein_request_reply_json(req, 200, json_incref((json_t *)rein_tool_manifest(tool)));
}

/*
 * Writes the normalized result (with the invalid payload in it for a call that could not run)
 * and answers 200.
 */
static void reply_result(rein_request *req, rein_call_result *res)
{
    struct rein_buf b;
    struct rein_jw w;

    rein_buf_init(&b, 0);
    rein_jw_init(&w, &b);
    rein_call_result_write(res, &w);
    if (rein_jw_finish(&w) != REIN_OK)
        rein_request_reply_error(req, 500, "internal", "out of memory writing the result");
    else
        rein__request_reply_buf(req, 200, "application/json", &b);
    rein_buf_release(&b);
}

/* Runs the call and answers; on the network thread for a quick tool, else on a worker. */
static void invoke_run(rein_request *req, void *userdata)
{
    const struct skills_ctx *c = userdata;
    const char *id = rein_request_param(req, "id");
    /* The arguments live in the request's body, which outlives the result. */
    struct rein_call_input in = {
        .name = id, .trace_id = rein_request_trace_id(req), .args_lent = true};
    struct rein_call_opts opts = {.cancel = rein_request_cancel(req)};
    rein_call_result *res = NULL;
    json_t *details = json_array();
    rein_error err;

    if (!details) {
        rein_request_reply_error(req, 500, "internal", "out of memory");
        return;
    }
    if (!rein__invoke_body_read(rein_request_json(req), id, &in, &opts.timeout_ms, details)) {
        rein__reply_problems(req, details);
        return;
    }
    json_decref(details);
    if (rein_call_run(c->reg, &in, &opts, &res, &err) != REIN_OK) {
        rein_request_reply_rein_error(req, &err);
        return;
    }
    rein_metrics_tool_call(c->metrics,
                           rein_call_result_tool(res) ? rein_call_result_tool_name(res) : NULL,
                           rein_call_status_name(rein_call_result_status(res)));
    reply_result(req, res);
    rein_call_result_free(res);
}

/*
 * A built-in tool that may take at most a second (echo) runs right here on the network thread,
 * which saves the hand-over to a worker and back (about half the cost of a small call); any
 * other tool (a process, a URL, a file search) runs on a worker, so a slow call never holds up
 * the other connections.
 */
static bool runs_inline(const rein_tool *tool)
{
    return strcmp(rein_tool_runner_kind(tool), "builtin") == 0 &&
           rein_tool_timeout_ms(tool) <= INLINE_MAX_TIMEOUT_MS;
}

static void invoke_skill(rein_request *req, void *userdata)
{
    const struct skills_ctx *c = userdata;
    const char *id = rein_request_param(req, "id");
    const rein_tool *tool = rein_registry_get(c->reg, id);

    if (!tool) {
        reply_unknown(req, c, id);
        return;
    }
    if (runs_inline(tool))
        invoke_run(req, userdata);
    else if (rein_request_defer(req, invoke_run, userdata) != REIN_OK)
        rein_request_reply_error(req, 500, "internal", "the call could not be handed to a worker");
}

static void free_ctx(void *p)
{
    rein_free(p);
}

rein_err rein_server_add_skill_routes(rein_server *srv, const rein_registry *reg, rein_metrics *m,
                                      rein_error *err)
{
    struct skills_ctx *c;
    rein_err rc;

    if (!srv || !reg)
        return rein_error_set(err, REIN_EINVAL, "the skill routes need a server and a registry");
    c = rein_calloc(1, sizeof(*c));
    if (!c)
        return rein_error_set(err, REIN_ENOMEM, "server: out of memory");
    c->reg = reg;
    c->metrics = m;
    rc = rein__server_keep(srv, c, free_ctx, err);
    if (rc != REIN_OK) {
        rein_free(c);
        return rc;
    }
    rc = rein_server_route(srv, "GET", "/skills", REIN_ROUTE_INLINE, list_skills, c, err);
    if (rc == REIN_OK)
        rc = rein_server_route(srv, "GET", "/skills/{id}", REIN_ROUTE_INLINE, get_skill, c, err);
    if (rc == REIN_OK)
        rc = rein_server_route(srv, "POST", "/skills/{id}/invoke",
                               REIN_ROUTE_JSON_BODY | REIN_ROUTE_INLINE, invoke_skill, c, err);
    return rc;
}
