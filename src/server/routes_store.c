/*
 * The routes that need only the store (rein_server_add_store_routes in include/rein/server.h):
 * the conversation list, one conversation with its messages, ledger and lock state, and
 * deletion. Agent routes (chat, cancel, approvals) are added beside these later; they use the
 * same request and store APIs.
 */
#include "server/server_int.h"

#include <string.h>

static void list_conversations(rein_request *req, void *userdata)
{
    rein_store *store = userdata;
    const char *limit_text = rein_request_query(req, "limit");
    const char *cursor = rein_request_query(req, "cursor");
    long limit = 20;
    json_t *page = NULL;
    rein_error err;

    if (limit_text && !rein__http_parse_uint(limit_text, 1, 100, &limit)) {
        rein_request_reply_error(req, 400, "bad_request", "limit must be a number from 1 to 100");
        return;
    }
    if (rein_store_conv_list(store, cursor, (unsigned)limit, &page, &err) != REIN_OK) {
        rein_request_reply_rein_error(req, &err);
        return;
    }
    rein_request_reply_json(req, 200, page);
}

static void get_conversation(rein_request *req, void *userdata)
{
    rein_store *store = userdata;
    const char *id = rein_request_param(req, "id");
    struct rein_store_lock_info info;
    json_t *conv = NULL, *lock = NULL;
    rein_error err;
    rein_err rc;

    if (rein_store_conv_export(store, id, &conv, &err) != REIN_OK) {
        rein_request_reply_rein_error(req, &err);
        return;
    }
    rc = rein_store_lock_get(store, id, &info, &err);
    if (rc == REIN_OK)
        lock = rein_lock_info_json(&info);
    else if (rc != REIN_ENOTFOUND) {
        json_decref(conv);
        rein_request_reply_rein_error(req, &err);
        return;
    }
    if (json_object_set_new(conv, "lock", lock ? lock : json_null())) {
        json_decref(conv);
        rein_request_reply_error(req, 500, "internal", "out of memory");
        return;
    }
    rein_request_reply_json(req, 200, conv);
}

static void delete_conversation(rein_request *req, void *userdata)
{
    rein_store *store = userdata;
    const char *id = rein_request_param(req, "id");
    struct rein_store_lock_info info;
    rein_error err;
    rein_err rc = rein_store_conv_delete(store, id, &err);

    if (rc == REIN_EBUSY) {
        rein_error lerr;
        if (rein_store_lock_get(store, id, &info, &lerr) == REIN_OK) {
            rein_request_reply_busy(req, id, &info);
            return;
        }
    }
    if (rc != REIN_OK) {
        rein_request_reply_rein_error(req, &err);
        return;
    }
    rein_request_reply_json(req, 200, json_pack("{s:s, s:b}", "id", id, "deleted", 1));
}

rein_err rein_server_add_store_routes(rein_server *srv, rein_store *store, rein_error *err)
{
    rein_err rc =
        rein_server_route(srv, "GET", "/agent/conversations", 0, list_conversations, store, err);

    if (rc == REIN_OK)
        rc = rein_server_route(srv, "GET", "/agent/conversations/{id}", 0, get_conversation, store,
                               err);
    if (rc == REIN_OK)
        rc = rein_server_route(srv, "DELETE", "/agent/conversations/{id}", 0, delete_conversation,
                               store, err);
    return rc;
}
