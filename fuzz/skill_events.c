/*
 * Fuzz target: the stderr event lines of process skills (rein__skills_event_line in
 * src/skills/runner_process.c). Whatever a skill writes on stderr, a line is either not an
 * event or an event whose fields are well-formed: a known kind, a level from the MCP list, a
 * number for progress.
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
    return 0;
}
