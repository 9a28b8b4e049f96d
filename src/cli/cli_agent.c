/*
 * What `rein chat` and `rein serve` share to set up an agent: the model provider from the
 * configuration file, the environment and the flags (the rules provider when no provider or
 * model is configured anywhere), and the tool registry (built-in skills, REIN_SKILLS_PATH,
 * --skills folders). `rein mcp` builds its registry the same way.
 */
#include "cli.h"

#include <stdlib.h>

/* True when a provider or model is configured anywhere: flags, environment, config file. */
static bool provider_configured(const char *config, size_t nflags)
{
    static const char *const env[] = {"REIN_PROVIDER", "REIN_MODEL", "REIN_BASE_URL",
                                      "REIN_REPLAY"};
    bool found = nflags > 0;

    for (size_t i = 0; !found && i < sizeof(env) / sizeof(env[0]); i++) {
        const char *v = getenv(env[i]);
        found = v && v[0];
    }
    if (!found && config) {
        json_t *cfg = rein_json_load_file(config, NULL);
        json_t *p = json_object_get(cfg, "provider");
        const json_t *obj = json_is_object(p) ? p : cfg;
        found =
            json_object_get(obj, "provider") || json_object_get(obj, "model") || json_is_string(p);
        json_decref(cfg);
    }
    return found;
}

rein_provider *cli_rules_new(rein_error *err)
{
    rein_provider_config *cfg = rein_provider_config_new();
    rein_provider *p = NULL;

    if (!cfg) {
        rein_error_set(err, REIN_ENOMEM, "out of memory");
        return NULL;
    }
    if (rein_provider_config_set_provider(cfg, "rules", err) == REIN_OK)
        p = rein_provider_new(cfg, err);
    rein_provider_config_free(cfg);
    return p;
}

rein_provider *cli_provider_new(const char *config, const char *const (*flags)[2], size_t nflags,
                                rein_error *err)
{
    rein_provider_config *cfg;
    rein_provider *p = NULL;

    if (!provider_configured(config, nflags))
        return cli_rules_new(err);
    cfg = rein_provider_config_new();
    if (!cfg) {
        rein_error_set(err, REIN_ENOMEM, "out of memory");
        return NULL;
    }
    if ((config && rein_provider_config_load_file(cfg, config, err) != REIN_OK) ||
        rein_provider_config_from_env(cfg, err) != REIN_OK)
        goto out;
    for (size_t i = 0; i < nflags; i++) {
        if (rein_provider_config_set(cfg, flags[i][0], flags[i][1], err) != REIN_OK)
            goto out;
    }
    p = rein_provider_new(cfg, err);
out:
    rein_provider_config_free(cfg);
    return p;
}

rein_registry *cli_registry_new(const char *const *skills, size_t nskills, const char *const *roots,
                                rein_error *err)
{
    struct rein_skills_config cfg = {.roots = roots && roots[0] ? roots : NULL};
    const char *env = getenv("REIN_SKILLS_PATH");
    rein_registry *reg = rein_registry_new(err);

    if (!reg || rein_skills_register_builtins(reg, &cfg, err) ||
        (env && *env && rein_registry_load_path(reg, env, NULL, err)))
        goto fail;
    for (size_t i = 0; i < nskills; i++) {
        if (rein_registry_load_dir(reg, skills[i], NULL, err))
            goto fail;
    }
    return reg;
fail:
    rein_registry_free(reg);
    return NULL;
}
