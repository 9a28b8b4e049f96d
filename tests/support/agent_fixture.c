/* The agent tests' provider and registry (agent_fixture.h). */
#include "agent_fixture.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>

static const char slow_manifest[] =
    "{\"id\": \"slow\", \"description\": \"Takes its time\", \"timeout_ms\": 60000,"
    " \"parameters\": {\"type\": \"object\"},"
    " \"runner\": {\"kind\": \"process\", \"command\": [\"/bin/sh\", \"-c\","
    " \"cat >/dev/null; exec sleep 30\"]}}";
static const char wipe_manifest[] =
    "{\"id\": \"wipe\", \"description\": \"Wipe a file\", \"destructive\": true,"
    " \"parameters\": {\"type\": \"object\", \"properties\": {\"path\": {\"type\": \"string\"}},"
    " \"required\": [\"path\"]},"
    " \"runner\": {\"kind\": \"process\", \"command\": [\"cat\"]}}";

rein_provider *test_ms_provider(const char *base_url)
{
    rein_provider_config *cfg = rein_provider_config_new();
    rein_provider *p;
    rein_error err;

    assert_non_null(cfg);
    assert_rein_ok(rein_provider_config_set(cfg, "provider", "openai-compatible", &err), &err);
    assert_rein_ok(rein_provider_config_set_base_url(cfg, base_url), NULL);
    assert_rein_ok(rein_provider_config_set_model(cfg, "test-model"), NULL);
    assert_rein_ok(rein_provider_config_set(cfg, "retry_base_ms", "5", &err), &err);
    p = rein_provider_new(cfg, &err);
    rein_provider_config_free(cfg);
    if (!p)
        fail_msg("provider: %s", err.msg);
    return p;
}

rein_registry *test_agent_registry(const char *dir)
{
    const char *roots[2] = {dir, NULL};
    struct rein_skills_config sc = {.roots = roots};
    rein_registry *reg;
    rein_error err;
    char path[1024];

    free(test_write_file(dir, "skills/slow/manifest.json", slow_manifest));
    free(test_write_file(dir, "skills/wipe/manifest.json", wipe_manifest));
    reg = rein_registry_new(&err);
    if (!reg)
        fail_msg("registry: %s", err.msg);
    assert_rein_ok(rein_skills_register_runners(reg, &err), &err);
    assert_rein_ok(rein_skills_register_builtins(reg, &sc, &err), &err);
    snprintf(path, sizeof(path), "%s/skills", dir);
    assert_rein_ok(rein_registry_load_dir(reg, path, NULL, &err), &err);
    assert_non_null(rein_registry_get(reg, "slow"));
    return reg;
}
