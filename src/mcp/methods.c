/*
 * The MCP methods about what the server offers besides tools: resources/list,
 * resources/templates/list, resources/read, resources/subscribe, resources/unsubscribe,
 * prompts/list, prompts/get and completion/complete. The data comes from resources.c and
 * prompts.c; this file reads the parameters, maps failures to the errors MCP names, and
 * answers through the request's sink. Called by server.c's dispatch for initialized sessions.
 */
#include "mcp/mcp_int.h"

#include <stdio.h>
#include <string.h>

static const char *param_str(const struct rein__mcp_msg *msg, const char *key)
{
    return json_string_value(json_object_get(msg->params, key));
}

static void errorf(struct rein__mcp_sink *sink, const json_t *id, int code, const char *fmt, ...)
    REIN_PRINTF(4, 5);

static void errorf(struct rein__mcp_sink *sink, const json_t *id, int code, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    rein__mcp_send_error(sink, id, code, msg);
}

/* The code a missing resource is answered with: -32002 up to 2025-11-25, -32602 after. */
static int not_found_code(const struct rein__mcp_session *sess)
{
    const char *v = rein__mcp_session_version(sess);

    return v[0] && strcmp(v, "2025-11-25") > 0 ? REIN__MCP_INVALID_PARAMS
                                               : REIN__MCP_RESOURCE_NOT_FOUND;
}

static void resources_list(rein_mcp_server *srv, const struct rein__mcp_msg *msg,
                           struct rein__mcp_sink *sink)
{
    const json_t *cursor = json_object_get(msg->params, "cursor");
    char *next = NULL;
    json_t *page, *result;
    rein_error err;

    if (cursor && !json_is_null(cursor) && !json_is_string(cursor)) {
        errorf(sink, msg->id, REIN__MCP_INVALID_PARAMS, "params.cursor must be a string");
        return;
    }
    rein_error_clear(&err);
    page = rein__mcp_resources_list(rein__mcp_srv_resources(srv), json_string_value(cursor), &next,
                                    &err);
    if (!page) {
        errorf(sink, msg->id,
               err.code == REIN_EINVAL ? REIN__MCP_INVALID_PARAMS : REIN__MCP_INTERNAL_ERROR, "%s",
               err.msg);
        return;
    }
    result = json_pack("{s:o}", "resources", page);
    if (result && next && json_object_set_new(result, "nextCursor", json_string(next))) {
        json_decref(result);
        result = NULL;
    }
    rein_free(next);
    rein__mcp_send_result(sink, msg->id, result);
}

static void resources_read(rein_mcp_server *srv, struct rein__mcp_session *sess,
                           const struct rein__mcp_msg *msg, struct rein__mcp_sink *sink)
{
    const char *uri = param_str(msg, "uri");
    json_t *result, *data;
    rein_error err;

    if (!uri) {
        errorf(sink, msg->id, REIN__MCP_INVALID_PARAMS, "resources/read needs params.uri");
        return;
    }
    rein_error_clear(&err);
    result = rein__mcp_resources_read(rein__mcp_srv_resources(srv), uri, &err);
    if (result) {
        rein__mcp_send_result(sink, msg->id, result);
        return;
    }
    if (err.code == REIN_ENOTFOUND || err.code == REIN_EDENIED) {
        data = json_pack("{s:s}", "uri", uri);
        rein__mcp_send_error_data(sink, msg->id, not_found_code(sess), "Resource not found", data);
        json_decref(data);
        return;
    }
    errorf(sink, msg->id, REIN__MCP_INTERNAL_ERROR, "%s", err.msg);
}

static void subscribe(rein_mcp_server *srv, struct rein__mcp_session *sess,
                      const struct rein__mcp_msg *msg, struct rein__mcp_sink *sink, bool on)
{
    const char *uri = param_str(msg, "uri");
    char *fp;
    rein_err rc = REIN_OK;

    if (!uri) {
        errorf(sink, msg->id, REIN__MCP_INVALID_PARAMS, "%s needs params.uri", msg->method);
        return;
    }
    if (!on) {
        rein__mcp_session_unsubscribe(sess, uri);
        rein__mcp_send_result(sink, msg->id, json_object());
        return;
    }
    /* A URI that does not exist yet may be subscribed to: its appearing is a change. */
    fp = rein__mcp_resources_fingerprint(rein__mcp_srv_resources(srv), uri);
    rc = fp ? rein__mcp_session_subscribe(sess, uri, fp) : REIN_ENOMEM;
    rein_free(fp);
    if (rc == REIN_ETOOBIG)
        errorf(sink, msg->id, REIN__MCP_INVALID_PARAMS,
               "this session already has as many subscriptions as a session may hold");
    else if (rc)
        errorf(sink, msg->id, REIN__MCP_INTERNAL_ERROR, "out of memory");
    else
        rein__mcp_send_result(sink, msg->id, json_object());
}

/* *args (borrowed) with the string fields of an accepted form's content for the arguments it
 * lacks, as a copy in *owned that *args then points to. False when out of memory. */
static bool fill_arguments(const json_t *content, const json_t **args, json_t **owned)
{
    const char *key;
    json_t *v;

    *owned = json_deep_copy(*args);
    json_object_foreach((json_t *)content, key, v)
    {
        if (*owned && json_is_string(v) && !json_object_get(*owned, key) &&
            json_object_set(*owned, key, v)) {
            json_decref(*owned);
            *owned = NULL;
        }
    }
    if (*owned)
        *args = *owned;
    return *owned != NULL;
}

/* The -32602 for a prompt whose client did not give the arguments it was asked for. */
static void not_given(struct rein__mcp_sink *sink, const json_t *id, const char *name,
                      const char *action)
{
    errorf(sink, id, REIN__MCP_INVALID_PARAMS,
           "the prompt %.100s was not given its required arguments: the client answered %.40s",
           name, action ? action : "(no action)");
}

/*
 * A client that declares elicitation is asked for the required arguments a prompts/get lacks
 * (any other client gets prompts/get's -32602 for a missing argument):
 *   - a stateless one (2026-07-28) with an input-required result (SEP-2322) under PROMPT_ASK;
 *     its retry brings the form's answer in inputResponses;
 *   - one with a session (2025-06-18, 2025-11-25) with elicitation/create, during the request
 *     (SEP-2260 ties such a request to the client's request it serves); the transports run
 *     such a prompts/get on the pool (rein__mcp_asks_first), as the answer comes on the
 *     connection.
 * A declined or cancelled form is -32602. The answer fills the arguments: *args (borrowed) is
 * replaced by a filled copy in *owned. False when the request was answered here.
 */
#define PROMPT_ASK "prompt_arguments"
static bool prompt_inputs(rein_mcp_server *srv, struct rein__mcp_session *sess,
                          const struct rein__mcp_msg *msg, const char *name, const json_t **args,
                          json_t **owned, struct rein__mcp_sink *sink)
{
    const json_t *given =
        json_object_get(json_object_get(msg->params, "inputResponses"), PROMPT_ASK);
    const char *action = json_string_value(json_object_get(given, "action"));
    json_t *ask, *answer = NULL;
    rein_error err;
    rein_err rc;

    if (rein__mcp_asks_first(srv, sess, msg)) {
        ask = rein__mcp_prompts_ask(rein__mcp_srv_prompts(srv), name, *args);
        rein_error_clear(&err);
        rc = ask ? rein__mcp_ask_during(srv, sess, msg, sink, "elicitation/create", ask, &answer,
                                        &err)
                 : REIN_ENOMEM;
        json_decref(ask);
        action = json_string_value(json_object_get(answer, "action"));
        if (rc == REIN_ECANCELED) {
            /* The client cancelled the request (or the session ended): MCP says no answer. */
        } else if (rc) {
            errorf(sink, msg->id, REIN__MCP_INVALID_PARAMS,
                   "the prompt %.100s lacks required arguments, and asking the client for them "
                   "failed: %s",
                   name, err.msg[0] ? err.msg : rein_strerror(rc));
        } else if (!action || strcmp(action, "accept") != 0) {
            not_given(sink, msg->id, name, action);
        } else if (!fill_arguments(json_object_get(answer, "content"), args, owned)) {
            errorf(sink, msg->id, REIN__MCP_INTERNAL_ERROR, "out of memory");
        } else {
            json_decref(answer);
            return true;
        }
        json_decref(answer);
        return false;
    }
    if (!rein__mcp_session_stateless_offers(sess, "elicitation"))
        return true;
    if (given && (!action || strcmp(action, "accept") != 0)) {
        not_given(sink, msg->id, name, action);
        return false;
    }
    if (given && !fill_arguments(json_object_get(given, "content"), args, owned)) {
        errorf(sink, msg->id, REIN__MCP_INTERNAL_ERROR, "out of memory");
        return false;
    }
    ask = rein__mcp_prompts_ask(rein__mcp_srv_prompts(srv), name, *args);
    if (!ask)
        return true;
    rein__mcp_send_result(sink, msg->id,
                          json_pack("{s:s, s:{s:{s:s, s:o}}}", "resultType", "input_required",
                                    "inputRequests", PROMPT_ASK, "method", "elicitation/create",
                                    "params", ask));
    return false;
}

static void prompts_get(rein_mcp_server *srv, struct rein__mcp_session *sess,
                        const struct rein__mcp_msg *msg, struct rein__mcp_sink *sink)
{
    const char *name = param_str(msg, "name");
    const json_t *args = json_object_get(msg->params, "arguments");
    json_t *result, *empty = NULL, *filled = NULL;
    rein_error err;
    int code = 0;

    if (!name) {
        errorf(sink, msg->id, REIN__MCP_INVALID_PARAMS, "prompts/get needs params.name");
        return;
    }
    if (args && !json_is_object(args)) {
        errorf(sink, msg->id, REIN__MCP_INVALID_PARAMS,
               "prompts/get needs params.arguments to be an object of strings");
        return;
    }
    if (!args)
        args = empty = json_object();
    if (!args || !prompt_inputs(srv, sess, msg, name, &args, &filled, sink)) {
        if (!args)
            errorf(sink, msg->id, REIN__MCP_INTERNAL_ERROR, "out of memory");
        json_decref(empty);
        return;
    }
    rein_error_clear(&err);
    result = rein__mcp_prompts_get(rein__mcp_srv_prompts(srv), rein__mcp_srv_registry(srv), name,
                                   args, &code, &err);
    json_decref(filled);
    json_decref(empty);
    if (result)
        rein__mcp_send_result(sink, msg->id, result);
    else
        errorf(sink, msg->id, code ? code : REIN__MCP_INTERNAL_ERROR, "%s", err.msg);
}

/* completion/complete: {ref: {type: ref/prompt, name} | {type: ref/resource, uri},
 * argument: {name, value}} → {completion: {values, total, hasMore}}. */
static void complete(rein_mcp_server *srv, const struct rein__mcp_msg *msg,
                     struct rein__mcp_sink *sink)
{
    const json_t *ref = json_object_get(msg->params, "ref");
    const json_t *arg = json_object_get(msg->params, "argument");
    const char *type = json_string_value(json_object_get(ref, "type"));
    const char *argname = json_string_value(json_object_get(arg, "name"));
    const char *value = json_string_value(json_object_get(arg, "value"));
    json_t *values = NULL;
    bool found = true;

    if (!type || !argname || !value) {
        errorf(sink, msg->id, REIN__MCP_INVALID_PARAMS,
               "completion/complete needs params.ref {type, name | uri} and params.argument "
               "{name, value}");
        return;
    }
    if (strcmp(type, "ref/prompt") == 0 && json_is_string(json_object_get(ref, "name"))) {
        values = rein__mcp_prompts_complete(rein__mcp_srv_prompts(srv), rein__mcp_srv_registry(srv),
                                            json_string_value(json_object_get(ref, "name")),
                                            argname, value, &found);
    } else if (strcmp(type, "ref/resource") == 0 && json_is_string(json_object_get(ref, "uri"))) {
        values = rein__mcp_resources_complete(rein__mcp_srv_resources(srv),
                                              json_string_value(json_object_get(ref, "uri")),
                                              argname, value);
    } else {
        errorf(sink, msg->id, REIN__MCP_INVALID_PARAMS,
               "params.ref.type must be ref/prompt (with name) or ref/resource (with uri)");
        return;
    }
    if (!found) {
        json_decref(values);
        errorf(sink, msg->id, REIN__MCP_INVALID_PARAMS, "Unknown prompt: %.100s",
               json_string_value(json_object_get(ref, "name")));
        return;
    }
    rein__mcp_send_result(sink, msg->id,
                          values ? json_pack("{s:{s:o, s:I, s:b}}", "completion", "values", values,
                                             "total", (json_int_t)json_array_size(values),
                                             "hasMore", 0)
                                 : NULL);
}

/* A list that is answered in one page: a cursor, if any, must be null or "". */
static bool one_page(const struct rein__mcp_msg *msg, struct rein__mcp_sink *sink)
{
    const json_t *cursor = json_object_get(msg->params, "cursor");

    if (!cursor || json_is_null(cursor) || (json_is_string(cursor) && !json_string_length(cursor)))
        return true;
    errorf(sink, msg->id, REIN__MCP_INVALID_PARAMS,
           "params.cursor is not a cursor this server gave");
    return false;
}

bool rein__mcp_handle_context(rein_mcp_server *srv, struct rein__mcp_session *sess,
                              const struct rein__mcp_msg *msg, struct rein__mcp_sink *sink)
{
    const char *m = msg->method;

    if (strcmp(m, "resources/list") == 0) {
        resources_list(srv, msg, sink);
    } else if (strcmp(m, "resources/templates/list") == 0) {
        if (one_page(msg, sink)) {
            json_t *t = rein__mcp_resources_templates(rein__mcp_srv_resources(srv));
            rein__mcp_send_result(sink, msg->id,
                                  t ? json_pack("{s:o}", "resourceTemplates", t) : NULL);
        }
    } else if (strcmp(m, "resources/read") == 0) {
        resources_read(srv, sess, msg, sink);
    } else if (strcmp(m, "resources/subscribe") == 0 || strcmp(m, "resources/unsubscribe") == 0) {
        subscribe(srv, sess, msg, sink, strcmp(m, "resources/subscribe") == 0);
    } else if (strcmp(m, "prompts/list") == 0) {
        if (one_page(msg, sink)) {
            json_t *p = rein__mcp_prompts_list(rein__mcp_srv_prompts(srv));
            rein__mcp_send_result(sink, msg->id, p ? json_pack("{s:o}", "prompts", p) : NULL);
        }
    } else if (strcmp(m, "prompts/get") == 0) {
        prompts_get(srv, sess, msg, sink);
    } else if (strcmp(m, "completion/complete") == 0) {
        complete(srv, msg, sink);
    } else {
        return false;
    }
    return true;
}
