/*
 * Fuzz target: manifests (src/tools/manifest.c, registry.c): any JSON text offered as a skill's
 * manifest.json is either added whole or refused with a JSON Pointer, never half-loaded.
 */
#include <rein/rein.h>

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rein_registry *reg;
    rein_error err;
    json_t *m;

    if (size > 65536)
        return 0;
    m = rein_json_parse((const char *)data, size, 0, NULL);
    if (!m)
        return 0;
    reg = rein_registry_new(NULL);
    if (!reg || rein_skills_register_runners(reg, NULL) || rein_mcp_register_runner(reg, NULL))
        abort();
    rein_error_clear(&err);
    if (rein_registry_add_manifest(reg, m, "/nonexistent", "fuzz", &err) == REIN_OK) {
        if (rein_registry_count(reg) != 1)
            abort();
        json_t *tools = rein_registry_tools_json(reg, REIN_TOOLS_MCP);
        if (!tools)
            abort();
        json_decref(tools);
    } else if (rein_registry_count(reg) != 0 || (err.code == REIN_ESCHEMA && err.msg[0] != '/')) {
        abort();
    }
    rein_registry_free(reg);
    json_decref(m);
    return 0;
}
