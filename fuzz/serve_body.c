/*
 * Fuzz target for the request bodies of the skill host and agent API (src/server/
 * routes_bodies.c): the first byte picks the route (chat, invoke, approval, proposal,
 * cancel), the rest is the body, parsed as the JSON routes do and read by that route's
 * reader. Nothing may crash, leak or read out of bounds; every problem must carry a path and
 * a message; a chat body that passes has a non-blank message whose title (as the session
 * module cuts it, src/session/session.c) is a clean prefix of its first line.
 */
#include "server/server_int.h"
#include "session/session_int.h"

/* Compiled into the target so that the coverage instrumentation reaches the readers. */
#include "server/routes_bodies.c"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_details(const json_t *details, bool ok)
{
    const json_t *d;
    size_t i;

    if (ok != (json_array_size(details) == 0))
        abort();
    json_array_foreach(details, i, d)
    {
        const char *path = json_string_value(json_object_get(d, "path"));
        if (!path || (path[0] && path[0] != '/') ||
            !json_string_value(json_object_get(d, "message")))
            abort();
    }
}

static void check_chat(const json_t *body, json_t *details)
{
    struct rein__chat_body cb;
    char title[REIN_SESSION_TITLE_MAX + 1];
    bool ok = rein__chat_body_read(body, &cb, details);

    check_details(details, ok);
    if (!ok)
        return;
    if (!cb.message || !cb.message[strspn(cb.message, " \t\r\n")])
        abort();
    if (cb.conv_id && !rein_store_id_is_valid(cb.conv_id))
        abort();
    rein__session_title(cb.message, title);
    if (strlen(title) > REIN_SESSION_TITLE_MAX || strpbrk(title, "\r\n") ||
        !strstr(cb.message, title))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *body, *details;
    struct rein_call_input in;
    int64_t timeout = 0;
    char reason[REIN__REASON_MAX];
    bool flag = false;

    if (size < 1)
        return 0;
    body = rein_json_parse((const char *)data + 1, size - 1, 0, NULL);
    details = json_array();
    if (!details) {
        json_decref(body);
        return 0;
    }
    switch (data[0] % 5) {
    case 0:
        if (body)
            check_chat(body, details);
        break;
    case 1:
        memset(&in, 0, sizeof(in));
        if (body)
            check_details(details, rein__invoke_body_read(body, "echo", &in, &timeout, details));
        if (timeout < 0)
            abort();
        break;
    case 2:
        if (body)
            check_details(details, rein__approval_body_read(body, &flag, details));
        break;
    case 3:
        if (body)
            check_details(details, rein__proposal_body_read(body, &flag, details));
        break;
    default:
        check_details(details, rein__cancel_body_read(body, reason, details));
        if (strncmp(reason, "cancelled by a client", 21) != 0)
            abort();
        break;
    }
    json_decref(details);
    json_decref(body);
    return 0;
}
