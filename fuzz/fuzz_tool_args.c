/*
 * Fuzz target: argument parsing (src/tools/args.c) and the pipeline's handling of whatever
 * argument text a model sends: parse, preflight against echo's and calculator's schemas, and
 * the invalid payload, which must always be valid JSON holding the text as received. The fast
 * parser is checked against jansson: whatever it accepts, jansson accepts as the same value.
 */
#include <rein/rein.h>

#include "tools/tools_int.h"

#include <stdlib.h>
#include <string.h>

static rein_registry *registry(void)
{
    static rein_registry *reg;

    if (!reg) {
        reg = rein_registry_new(NULL);
        if (!reg || rein_skills_register_builtins(reg, NULL, NULL))
            abort();
    }
    return reg;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    struct rein__tools_args_error e;
    json_t *args = NULL;
    char ptr[128];

    if (size > 65536)
        return 0;
    json_t *fast = rein__json_parse_fast(text, size);
    if (fast) {
        json_t *slow =
            json_loadb(text, size, JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES, NULL);
        if (!slow || !json_equal(fast, slow))
            abort();
        json_decref(slow);
        json_decref(fast);
    }
    if (rein__tools_args_parse(text, size, 4096, &args, &e) == REIN_OK && !json_is_object(args))
        abort();
    json_decref(args);
    rein__tools_pointer_at(text, size, size / 2, ptr, sizeof(ptr));
    /* calculator runs the expression parser on what passes preflight; echo only echoes. */
    static const char *const tools[] = {"echo", "calculator"};
    for (size_t i = 0; i < 2; i++) {
        struct rein_call_input in = {.call_id = "call_1",
                                     .name = tools[i],
                                     .args_text = text,
                                     .args_len = size,
                                     .trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"};
        rein_call_result *res = NULL;
        if (rein_call_run(registry(), &in, NULL, &res, NULL) == REIN_OK &&
            !rein_call_result_model_json(res))
            abort();
        rein_call_result_free(res);
    }
    return 0;
}
