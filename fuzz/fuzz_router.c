/*
 * Fuzz target: the rules router (src/providers/router*.c) on a request's text: normalising,
 * splitting, the rows of the built-in skills and their argument extractors (numbers, arithmetic
 * in words, search terms, folders, limits, log files). Whatever the bytes, routing ends with
 * at most REIN__ROUTE_MAX_CALLS calls, each with an object of arguments.
 */
#include <rein/rein.h>

#include "providers/router_int.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static rein_registry *reg;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const names[] = {"echo", "file_search", "calculator", "log_transform"};
    struct rein__route_plan plan;
    char *text;

    if (size > 4096)
        return 0;
    if (!reg) {
        reg = rein_registry_new(NULL);
        if (!reg || rein_skills_register_builtins(reg, NULL, NULL) != REIN_OK)
            abort();
    }
    text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    if (rein__router_route(reg, names, 4, text, &plan) == REIN_OK) {
        if (plan.n > REIN__ROUTE_MAX_CALLS)
            abort();
        for (size_t i = 0; i < plan.n; i++) {
            if (!plan.calls[i].tool || !json_is_object(plan.calls[i].args))
                abort();
        }
    }
    rein__route_plan_release(&plan);
    rein_free(rein__args_expression(text));
    json_decref(rein__args_numbers(text));
    free(text);
    return 0;
}
