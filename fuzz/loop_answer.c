/*
 * Fuzz target for what the verification loop reads from an agent's answer (src/verify/
 * loop_text.c and the confidence reader it shares with src/agent/): the "BLOCKED: …" line,
 * the one-line summary of a turn (the answer's first sentence, and the key argument of tool
 * calls whose arguments are the input parsed as JSON), and the shortened copy of those
 * arguments kept in the history. The reason must fit its buffer, the summary must stay short
 * and valid UTF-8, and the stated confidence must be -1 or in [0, 1].
 */
#include <rein/rein.h>

#include "agent/agent_int.h"
#include "verify/loop_int.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool valid_utf8(const char *s)
{
    json_t *j = json_string(s); /* jansson refuses invalid UTF-8 */
    bool ok = j != NULL;

    json_decref(j);
    return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1), why[64];
    json_t *args, *calls, *shortened;
    char *summary;
    double c;

    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    memset(why, 'x', sizeof(why));
    if (rein__loop_blocked(text, size, why, sizeof(why)) && strlen(why) >= sizeof(why))
        __builtin_trap();
    c = rein_agent_stated_confidence(text);
    if (!(c == -1 || (c >= 0 && c <= 1)))
        __builtin_trap();
    args = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
    calls = json_pack("[{s:s, s:O?, s:s}]", "tool", "write_file", "arguments", args, "status",
                      "success");
    summary = rein__loop_summary(calls, text);
    if (summary && (strlen(summary) > 320 || !valid_utf8(summary)))
        __builtin_trap();
    rein_free(summary);
    shortened = args ? rein__loop_shorten(args, 16) : NULL;
    json_decref(shortened);
    json_decref(calls);
    json_decref(args);
    free(text);
    return 0;
}
