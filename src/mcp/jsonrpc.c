/*
 * JSON-RPC 2.0 messages as MCP uses them: the decoder every byte from a peer goes through
 * (stdio lines, HTTP bodies, SSE events; fuzzed by fuzz/mcp_jsonrpc.c), the encoders for the
 * four kinds of message, and the small tables both sides share (protocol revisions, log
 * levels).
 *
 * MCP narrows JSON-RPC: no batches (2025-06-18 removed them), request ids are strings or
 * integers and never null, params is an object. A message that breaks these rules is
 * REIN_EINVALID, answered with -32600 and, when the id could be read, that id; text that is
 * not JSON at all is REIN_EPARSE, answered with -32700 and a null id.
 */
#include "mcp/mcp_int.h"

#include <string.h>
#include <time.h>

static const char *const versions[] = {"2025-11-25", "2025-06-18", "2025-03-26"};

bool rein__mcp_version_supported(const char *version)
{
    for (size_t i = 0; version && i < REIN_ARRAY_SIZE(versions); i++) {
        if (strcmp(version, versions[i]) == 0)
            return true;
    }
    return false;
}

void rein__mcp_cond_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t ms)
{
    struct timespec ts = rein__deadline_ts(CLOCK_REALTIME, ms);

    pthread_cond_timedwait(cv, mu, &ts);
}

json_t *rein__mcp_versions_json(void)
{
    json_t *a = json_pack("[s]", REIN__MCP_MODERN);

    for (size_t i = 0; a && i < sizeof(versions) / sizeof(versions[0]); i++) {
        if (json_array_append_new(a, json_string(versions[i]))) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

bool rein__mcp_version_primes(const char *version)
{
    /* Revisions are dates, so they compare as text. */
    return version && strlen(version) == 10 && strcmp(version, "2025-11-25") >= 0;
}

static const char *const levels[] = {"debug", "info",     "notice", "warning",
                                     "error", "critical", "alert",  "emergency"};

int rein__mcp_level_index(const char *level)
{
    for (int i = 0; level && i < (int)(REIN_ARRAY_SIZE(levels)); i++) {
        if (strcmp(level, levels[i]) == 0)
            return i;
    }
    return -1;
}

const char *rein__mcp_level_name(int index)
{
    if (index < 0 || index >= (int)(REIN_ARRAY_SIZE(levels)))
        return "info";
    return levels[index];
}

void rein__mcp_msg_release(struct rein__mcp_msg *msg)
{
    if (!msg)
        return;
    json_decref(msg->doc);
    memset(msg, 0, sizeof(*msg));
}

int rein__mcp_decode_error_code(rein_err rc)
{
    return rc == REIN_EPARSE ? REIN__MCP_PARSE_ERROR : REIN__MCP_INVALID_REQUEST;
}

static bool id_ok(const json_t *id)
{
    return json_is_string(id) || json_is_integer(id);
}

/* Classifies a parsed object; on failure returns REIN_EINVALID with err set. */
static rein_err classify(struct rein__mcp_msg *msg, rein_error *err)
{
    json_t *doc = msg->doc;
    const json_t *version = json_object_get(doc, "jsonrpc");
    const json_t *id = json_object_get(doc, "id");
    const json_t *method = json_object_get(doc, "method");
    const json_t *params = json_object_get(doc, "params");
    const json_t *result = json_object_get(doc, "result");
    const json_t *error = json_object_get(doc, "error");

    if (!json_is_string(version) || strcmp(json_string_value(version), "2.0") != 0)
        return rein_error_set(err, REIN_EINVALID, "\"jsonrpc\" must be \"2.0\"");
    if (method) {
        if (!json_is_string(method) || !json_string_value(method)[0])
            return rein_error_set(err, REIN_EINVALID, "\"method\" must be a non-empty string");
        if (result || error)
            return rein_error_set(err, REIN_EINVALID,
                                  "a message has a method or a result/error, not both");
        if (params && !json_is_object(params))
            return rein_error_set(err, REIN_EINVALID, "\"params\" must be an object");
        if (id && !id_ok(id))
            return rein_error_set(err, REIN_EINVALID,
                                  "\"id\" must be a string or an integer (MCP ids are never null)");
        msg->kind = id ? REIN__MCP_REQUEST : REIN__MCP_NOTIFICATION;
        msg->id = id;
        msg->method = json_string_value(method);
        msg->params = params;
        return REIN_OK;
    }
    if (!result == !error)
        return rein_error_set(err, REIN_EINVALID,
                              "a message needs a \"method\", or exactly one of \"result\" and "
                              "\"error\"");
    if (result) {
        if (!id_ok(id))
            return rein_error_set(err, REIN_EINVALID,
                                  "a response's \"id\" must be a string or an integer");
        msg->kind = REIN__MCP_RESPONSE;
        msg->id = id;
        msg->result = result;
        return REIN_OK;
    }
    if (!id || !(id_ok(id) || json_is_null(id)))
        return rein_error_set(err, REIN_EINVALID,
                              "an error response's \"id\" must be a string, an integer or null");
    if (!json_is_object(error) || !json_is_integer(json_object_get(error, "code")) ||
        !json_is_string(json_object_get(error, "message")))
        return rein_error_set(err, REIN_EINVALID,
                              "\"error\" must be an object with an integer \"code\" and a "
                              "string \"message\"");
    msg->kind = REIN__MCP_ERROR;
    msg->id = id;
    msg->error_code = (int)json_integer_value(json_object_get(error, "code"));
    msg->error_message = json_string_value(json_object_get(error, "message"));
    msg->error_data = json_object_get(error, "data");
    return REIN_OK;
}

rein_err rein__mcp_decode(const char *text, size_t len, size_t max_len, struct rein__mcp_msg *msg,
                          json_t **bad_id, rein_error *err)
{
    rein_error perr;
    rein_err rc;
    bool response;

    memset(msg, 0, sizeof(*msg));
    if (bad_id)
        *bad_id = NULL;
    if (max_len && len > max_len)
        return rein_error_set(err, REIN_ETOOBIG, "the message is larger than %zu bytes", max_len);
    rein_error_clear(&perr);
    msg->doc = rein_json_parse(text, len, JSON_REJECT_DUPLICATES, &perr);
    if (!msg->doc)
        return rein_error_set(err, REIN_EPARSE, "Parse error: not JSON: %s", perr.msg);
    if (json_is_array(msg->doc)) {
        rc = rein_error_set(err, REIN_EINVALID,
                            "batches (JSON arrays) are not supported; send one message at a time");
        goto fail;
    }
    if (!json_is_object(msg->doc)) {
        rc = rein_error_set(err, REIN_EINVALID, "a message must be a JSON object, not %s",
                            rein_json_type_name(msg->doc));
        goto fail;
    }
    rc = classify(msg, err);
    if (rc == REIN_OK)
        return REIN_OK;
fail:
    if (bad_id) {
        json_t *id = json_is_object(msg->doc) ? json_object_get(msg->doc, "id") : NULL;
        if (id_ok(id))
            *bad_id = json_incref(id);
    }
    response = json_is_object(msg->doc) && !json_object_get(msg->doc, "method") &&
               (json_object_get(msg->doc, "result") || json_object_get(msg->doc, "error"));
    rein__mcp_msg_release(msg);
    /* A broken response is still a response: JSON-RPC never answers one, and answering it
     * with an error could start two peers answering each other's errors forever. */
    msg->kind = response ? REIN__MCP_RESPONSE : REIN__MCP_REQUEST;
    return rc;
}

static void begin(struct rein_jw *w, struct rein_buf *b, const json_t *id, bool with_id)
{
    rein_jw_init(w, b);
    rein_jw_obj_begin(w);
    rein_jw_key(w, "jsonrpc");
    rein_jw_str(w, "2.0");
    if (with_id) {
        rein_jw_key(w, "id");
        if (id)
            rein_jw_json(w, id);
        else
            rein_jw_null(w);
    }
}

static rein_err finish(struct rein_jw *w, struct rein_buf *b, size_t before)
{
    rein_err rc;

    rein_jw_obj_end(w);
    rc = rein_jw_finish(w);
    if (rc)
        rein_buf_truncate(b, before);
    return rc;
}

rein_err rein__mcp_write_result(struct rein_buf *b, const json_t *id, const json_t *result)
{
    struct rein_jw w;
    size_t before = b->len;

    begin(&w, b, id, true);
    rein_jw_key(&w, "result");
    if (result)
        rein_jw_json(&w, result);
    else
        rein_jw_raw(&w, "{}", 2);
    return finish(&w, b, before);
}

rein_err rein__mcp_write_error(struct rein_buf *b, const json_t *id, int code, const char *message,
                               const json_t *data)
{
    struct rein_jw w;
    size_t before = b->len;

    begin(&w, b, id, true);
    rein_jw_key(&w, "error");
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "code");
    rein_jw_int(&w, code);
    rein_jw_key(&w, "message");
    rein_jw_str(&w, message ? message : "");
    if (data) {
        rein_jw_key(&w, "data");
        rein_jw_json(&w, data);
    }
    rein_jw_obj_end(&w);
    return finish(&w, b, before);
}

rein_err rein__mcp_write_notification(struct rein_buf *b, const char *method, const json_t *params)
{
    struct rein_jw w;
    size_t before = b->len;

    begin(&w, b, NULL, false);
    rein_jw_key(&w, "method");
    rein_jw_str(&w, method);
    if (params) {
        rein_jw_key(&w, "params");
        rein_jw_json(&w, params);
    }
    return finish(&w, b, before);
}

rein_err rein__mcp_write_request(struct rein_buf *b, int64_t id, const char *method,
                                 const json_t *params)
{
    struct rein_jw w;
    size_t before = b->len;

    begin(&w, b, NULL, false);
    rein_jw_key(&w, "id");
    rein_jw_int(&w, id);
    rein_jw_key(&w, "method");
    rein_jw_str(&w, method);
    if (params) {
        rein_jw_key(&w, "params");
        rein_jw_json(&w, params);
    }
    return finish(&w, b, before);
}

bool rein__mcp_id_key(const json_t *id, char *out, size_t size)
{
    struct rein_buf b;
    bool ok;

    if (!id_ok(id) || size == 0)
        return false;
    /* The JSON text itself: exact for any string (NUL bytes included) and any integer. */
    rein_buf_init(&b, size);
    ok = rein_json_dump(&b, id) == REIN_OK;
    if (ok)
        memcpy(out, b.ptr, b.len + 1);
    rein_buf_release(&b);
    return ok;
}
