/*
 * Fuzz target: the stderr lines of process skills (rein__skills_event_line and
 * rein__skills_request_line in src/skills/runner_process.c). Whatever a skill writes on
 * stderr, a line is either not an event or an event whose fields are well-formed: a known
 * kind, a level from the MCP list, a number for progress; and either not a request to the
 * client or one with a method, a string or integer id and object params (or none).
 */
#include <rein/rein.h>

#include "skills/skills_int.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rein_call_event ev;
    json_t *doc = NULL;

    if (size > 65536)
        return 0;
    if (rein__skills_event_line((const char *)data, size, &ev, &doc)) {
        if (!doc)
            abort();
        if (ev.kind == REIN_CALL_EVENT_LOG && (!ev.level || !ev.data))
            abort();
        if (ev.kind != REIN_CALL_EVENT_LOG && ev.kind != REIN_CALL_EVENT_PROGRESS)
            abort();
    } else if (doc) {
        abort();
    }
    json_decref(doc);
    struct rein__skills_request req;
    size_t n = rein__skills_request_line((const char *)data, size, &doc);
    if (n > REIN__SKILLS_BATCH_MAX || (n > 0) != (doc != NULL))
        abort();
    for (size_t i = 0; i < n; i++) {
        if (!rein__skills_request_at(doc, i, &req) || !req.method ||
            !(json_is_string(req.id) || json_is_integer(req.id)) ||
            (req.params && !json_is_object(req.params)))
            abort();
    }
    json_decref(doc);
    return 0;
}
