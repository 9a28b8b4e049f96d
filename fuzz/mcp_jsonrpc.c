/*
 * Fuzz target: the MCP JSON-RPC decoder (src/mcp/jsonrpc.c), which every byte from an MCP peer
 * goes through (stdio lines, HTTP bodies, SSE events). Whatever the input, the decoder either
 * refuses it with -32700/-32600 (keeping only a string or integer id for the answer) or yields
 * a message whose parts are consistent with its kind; a decoded message, encoded again, decodes
 * to the same kind and id; and the error answer for a refused message is itself a valid
 * message.
 */
#include <rein/rein.h>

#include "mcp/mcp_int.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_kind(const struct rein__mcp_msg *m)
{
    switch (m->kind) {
    case REIN__MCP_REQUEST:
        if (!m->method || !(json_is_string(m->id) || json_is_integer(m->id)))
            abort();
        break;
    case REIN__MCP_NOTIFICATION:
        if (!m->method || m->id)
            abort();
        break;
    case REIN__MCP_RESPONSE:
        if (!m->result || m->method)
            abort();
        break;
    case REIN__MCP_ERROR:
        if (!m->error_message || m->method)
            abort();
        break;
    }
    if (m->params && !json_is_object(m->params))
        abort();
}

/* Encodes m again and decodes the text: same kind, same id. */
static void round_trip(const struct rein__mcp_msg *m)
{
    struct rein__mcp_msg again;
    struct rein_buf b;
    rein_err rc = REIN_OK;

    rein_buf_init(&b, 0);
    switch (m->kind) {
    case REIN__MCP_REQUEST:
        if (json_is_integer(m->id))
            rc = rein__mcp_write_request(&b, json_integer_value(m->id), m->method, m->params);
        else
            rc = rein__mcp_write_notification(&b, m->method, m->params);
        break;
    case REIN__MCP_NOTIFICATION:
        rc = rein__mcp_write_notification(&b, m->method, m->params);
        break;
    case REIN__MCP_RESPONSE:
        rc = rein__mcp_write_result(&b, m->id, m->result);
        break;
    case REIN__MCP_ERROR:
        rc = rein__mcp_write_error(&b, json_is_null(m->id) ? NULL : m->id, m->error_code,
                                   m->error_message, m->error_data);
        break;
    }
    if (rc == REIN_OK) {
        if (rein__mcp_decode(b.ptr, b.len, 0, &again, NULL, NULL) != REIN_OK)
            abort();
        if (m->kind != REIN__MCP_REQUEST || json_is_integer(m->id)) {
            if (again.kind != m->kind)
                abort();
            if (m->id && !json_is_null(m->id) && !json_equal(again.id, m->id))
                abort();
        }
        rein__mcp_msg_release(&again);
    }
    rein_buf_release(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rein__mcp_msg m;
    json_t *bad_id = NULL;
    rein_error err;
    rein_err rc;
    char key[320];

    if (size > 1 << 20)
        return 0;
    rc = rein__mcp_decode((const char *)data, size, 0, &m, &bad_id, &err);
    if (rc == REIN_OK) {
        if (bad_id)
            abort();
        check_kind(&m);
        if (m.id && !json_is_null(m.id) && !rein__mcp_id_key(m.id, key, sizeof(key)) &&
            json_is_integer(m.id))
            abort();
        round_trip(&m);
        rein__mcp_msg_release(&m);
        return 0;
    }
    if (rc != REIN_EPARSE && rc != REIN_EINVALID)
        abort();
    if (m.doc || (bad_id && !json_is_string(bad_id) && !json_is_integer(bad_id)))
        abort();
    /* The answer to a bad message is a valid message. */
    struct rein_buf b;
    rein_buf_init(&b, 0);
    if (rein__mcp_write_error(&b, bad_id, rein__mcp_decode_error_code(rc), err.msg, NULL) ==
        REIN_OK) {
        if (rein__mcp_decode(b.ptr, b.len, 0, &m, NULL, NULL) != REIN_OK ||
            m.kind != REIN__MCP_ERROR)
            abort();
        rein__mcp_msg_release(&m);
    }
    rein_buf_release(&b);
    json_decref(bad_id);
    return 0;
}
