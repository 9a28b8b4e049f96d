/*
 * Fuzz target for what the agent loop reads from outside (src/agent/, src/providers/rules.c).
 * The first byte picks the part; the rest is the input:
 *   0  a verifier's reply (YES/NO and the reason) and a reply's "confidence: N" statement:
 *      the reason is a NUL-terminated string; the confidence is -1 or in [0, 1]
 *   1  a user message, as a whole turn with the rules provider (routes, splitting "A, then
 *      B", coercion of captures): the turn ends normally and every call has its result
 *   2  a stored conversation (a JSON array of messages) given to rein_agent_history_repair:
 *      afterwards every tool call in it has exactly one result
 */
#include <rein/rein.h>

#include "agent/agent_int.h"

#include <stdlib.h>
#include <string.h>

static rein_agent *agent(void)
{
    static rein_registry *reg;
    static rein_provider *p;
    static rein_agent *a;
    rein_provider_config *cfg;

    if (a)
        return a;
    reg = rein_registry_new(NULL);
    cfg = rein_provider_config_new();
    if (!reg || !cfg || rein_skills_register_builtins(reg, NULL, NULL) ||
        rein_provider_config_set_provider(cfg, "rules", NULL))
        abort();
    p = rein_provider_new(cfg, NULL);
    rein_provider_config_free(cfg);
    a = p ? rein_agent_new(p, reg, NULL) : NULL;
    if (!a)
        abort();
    return a;
}

/* Every call answered, and by a tool message of its id. */
static void check_answered(const rein_history *h)
{
    for (size_t i = 0; i < rein_history_len(h); i++) {
        const json_t *m = rein_history_get(h, i), *c;
        const json_t *calls = json_object_get(m, "tool_calls");
        const char *role = json_string_value(json_object_get(m, "role"));
        size_t k, answers;
        if (strcmp(role, "assistant") != 0)
            continue; /* tool_calls elsewhere are not calls */
        json_array_foreach(calls, k, c)
        {
            const char *id = json_string_value(json_object_get(c, "id"));
            answers = 0;
            for (size_t j = i + 1; j < rein_history_len(h); j++) {
                const char *t =
                    json_string_value(json_object_get(rein_history_get(h, j), "tool_call_id"));
                answers += t && strcmp(t, id) == 0;
            }
            if (answers == 0)
                __builtin_trap();
        }
    }
}

static void verdict(const char *text)
{
    char reason[320];
    bool passed;
    double c = rein_agent_stated_confidence(text);

    rein__agent_parse_verdict(text, &passed, reason, sizeof(reason));
    if (strlen(reason) >= sizeof(reason) || !(c == -1 || (c >= 0 && c <= 1)))
        __builtin_trap();
}

static void turn(const char *text)
{
    /* Only tools that touch no files: a fuzzer must not walk the disk. */
    static const char *const tools[] = {"echo", "calculator"};
    struct rein_agent_turn_opts o = {.tools = tools, .tool_count = 2};
    rein_history *h = rein_history_new();
    rein_agent_result *r = NULL;

    if (h && rein_agent_run(agent(), h, text, &o, &r, NULL) == REIN_OK) {
        check_answered(h);
        json_decref(rein_agent_result_json(r));
    }
    rein_agent_result_free(r);
    rein_history_free(h);
}

static void repair(const char *text, size_t len)
{
    json_t *msgs = rein_json_parse(text, len, 0, NULL);
    rein_history *h = msgs ? rein_history_from_json(msgs, NULL) : NULL;
    size_t added;

    if (h && rein_agent_history_repair(h, "fuzz", &added, NULL) == REIN_OK)
        check_answered(h);
    rein_history_free(h);
    json_decref(msgs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text;

    if (size < 1 || size > 65536)
        return 0;
    text = malloc(size);
    if (!text)
        return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    switch (data[0] % 3) {
    case 0:
        verdict(text);
        break;
    case 1:
        turn(text);
        break;
    default:
        repair(text, size - 1);
        break;
    }
    free(text);
    return 0;
}
