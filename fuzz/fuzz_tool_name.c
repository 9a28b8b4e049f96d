/*
 * Fuzz target: tool-name checking and repair (src/tools/repair.c), and the shapes the pipeline
 * writes for whatever name a model sends (invalid payload, ledger entry), which must always be
 * valid JSON. The registry holds the built-in skills and a few names that make repair work.
 */
#include <rein/rein.h>

#include "tools/tools_int.h"

#include <stdlib.h>
#include <string.h>

static rein_registry *registry(void)
{
    static rein_registry *reg;
    static const char *const extra[] = {"read_file", "read_files", "ls", "Echo", "web-fetch"};

    if (reg)
        return reg;
    reg = rein_registry_new(NULL);
    if (!reg || rein_skills_register_runners(reg, NULL) ||
        rein_skills_register_builtins(reg, NULL, NULL))
        abort();
    for (size_t i = 0; i < REIN_ARRAY_SIZE(extra); i++) {
        json_t *m = json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:s}}", "id", extra[i], "description",
                              "d", "parameters", "type", "object", "runner", "kind", "http", "url",
                              "http://127.0.0.1:9/");
        if (!m || rein_registry_add_manifest(reg, m, NULL, "fuzz", NULL))
            abort();
        json_decref(m);
    }
    return reg;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rein_registry *reg = registry();
    const char *name = (const char *)data;
    enum rein_repair how;
    rein_error why;
    char norm[REIN__TOOLS_NAME_NORM_MAX + 1];

    if (size > 256)
        return 0;
    rein__tools_name_normalize(name, size, norm);
    if (strlen(norm) > REIN__TOOLS_NAME_NORM_MAX)
        abort();
    if (rein_tool_name_check(name, size, &why) == REIN_OK) {
        const rein_tool *t = rein__tools_resolve(reg, name, size, &how, &why);
        if (t && how == REIN_REPAIR_EXACT &&
            (size != strlen(rein_tool_id(t)) || memcmp(name, rein_tool_id(t), size) != 0))
            abort();
    }
    /* A name is never run: the argument "{}" fails preflight for the tools that have
     * required fields, and the call below uses check_only. */
    struct rein_call_input in = {.call_id = "call_1",
                                 .name = size ? name : NULL,
                                 .name_len = size,
                                 .args_text = "{}",
                                 .args_len = 2,
                                 .trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"};
    struct rein_call_opts opts = {.check_only = true};
    rein_call_result *res = NULL;
    if (rein_call_run(reg, &in, &opts, &res, NULL) == REIN_OK) {
        if (!rein_call_result_model_json(res) || !rein_call_result_ledger_json(res) ||
            !rein_call_result_steps_json(res))
            abort();
    }
    rein_call_result_free(res);
    return 0;
}
