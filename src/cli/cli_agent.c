/*
 * What `rein chat`, `rein loop`, `rein plan` and `rein serve` build from their struct
 * cli_setup: the model provider from the configuration file, the environment and the flags
 * (the rules provider when no provider or model is configured anywhere), the tool registry
 * (built-in skills, REIN_SKILLS_PATH, --skills folders), the agent over both, and the store.
 * `rein skills` and `rein mcp` build their registry the same way.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

bool cli_provider_configured(const struct cli_setup *s)
{
    static const char *const env[] = {"REIN_PROVIDER", "REIN_MODEL", "REIN_BASE_URL",
                                      "REIN_REPLAY"};
    bool found = false;

    /* A recording to write is no provider; a recording to replay is one. */
    for (size_t i = 0; !found && i < s->nflags; i++)
        found = strcmp(s->flags[i][0], "record") != 0;

    for (size_t i = 0; !found && i < REIN_ARRAY_SIZE(env); i++) {
        const char *v = getenv(env[i]);
        found = v && v[0];
    }
    if (!found && cli_config_doc()) {
        const json_t *cfg = cli_config_doc();
        const json_t *p = json_object_get(cfg, "provider");
        const json_t *obj = json_is_object(p) ? p : cfg;
        found =
            json_object_get(obj, "provider") || json_object_get(obj, "model") || json_is_string(p);
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

rein_provider *cli_provider_new(const struct cli_setup *s, const char *model, rein_error *err)
{
    rein_provider_config *cfg;
    rein_provider *p = NULL;
    bool rules = !model && !cli_provider_configured(s);

    cfg = rein_provider_config_new();
    if (!cfg) {
        rein_error_set(err, REIN_ENOMEM, "out of memory");
        return NULL;
    }
    /* Nothing names a provider: the rules answer (a recording still applies). Otherwise the
     * file, checked whole when the command started (cli_config_load), then the environment. */
    if (rules ? rein_provider_config_set_provider(cfg, "rules", err) != REIN_OK
              : cli_config_doc() &&
                    rein_provider_config_apply_json(cfg, cli_config_doc(), err) != REIN_OK)
        goto out;
    if (rein_provider_config_from_env(cfg, err) != REIN_OK)
        goto out;
    for (size_t i = 0; i < s->nflags; i++) {
        if (rein_provider_config_set(cfg, s->flags[i][0], s->flags[i][1], err) != REIN_OK)
            goto out;
    }
    if (model && rein_provider_config_set(cfg, "model", model, err) != REIN_OK)
        goto out;
    p = rein_provider_new(cfg, err);
out:
    rein_provider_config_free(cfg);
    return p;
}

rein_registry *cli_registry_new(const struct cli_setup *s, rein_error *err)
{
    struct rein_skills_config cfg = {.roots = s->nroots ? s->roots : NULL};
    const char *env = getenv("REIN_SKILLS_PATH");
    rein_registry *reg = rein_registry_new(err);

    /* The command's registry knows every runner kind rein has: skill folders may name any. */
    if (!reg || rein_skills_register_runners(reg, err) || rein_mcp_register_runner(reg, err) ||
        rein_skills_register_builtins(reg, &cfg, err) ||
        (env && *env && rein_registry_load_path(reg, env, NULL, err)))
        goto fail;
    for (size_t i = 0; i < s->nskills; i++) {
        if (rein_registry_load_dir(reg, s->skills[i], NULL, err))
            goto fail;
    }
    return reg;
fail:
    rein_registry_free(reg);
    return NULL;
}

void cli_registry_report(const rein_registry *reg)
{
    const json_t *p;
    size_t i;

    json_array_foreach(rein_registry_problems(reg), i, p)
    {
        const char *ptr = json_string_value(json_object_get(p, "pointer"));
        fprintf(stderr, "rein: skipped %s: %s%s%s\n", json_string_value(json_object_get(p, "file")),
                ptr && ptr[0] ? ptr : "", ptr && ptr[0] ? ": " : "",
                json_string_value(json_object_get(p, "message")));
    }
}

rein_err cli_parts_new(const struct cli_setup *s, bool agent, struct cli_parts *p, rein_error *err)
{
    memset(p, 0, sizeof(*p));
    p->provider = cli_provider_new(s, NULL, err);
    if (!p->provider)
        goto fail;
    cli_log_provider(NULL, p->provider);
    p->reg = cli_registry_new(s, err);
    if (!p->reg)
        goto fail;
    if (!agent)
        return REIN_OK;
    p->agent = rein_agent_new(p->provider, p->reg, err);
    if (!p->agent)
        goto fail;
    /* Exported metrics come from the process-wide registry, which only an observed agent
     * records into (rein serve observes its agent the same way). */
    if (rein_trace_metrics_enabled())
        rein_metrics_observe_agent(p->agent, NULL);
    if (s->rules_first && strcmp(rein_provider_name(p->provider), "rules") != 0) {
        p->rules = cli_rules_new(err);
        if (!p->rules)
            goto fail;
        rein_agent_set_rules(p->agent, p->rules);
    }
    return REIN_OK;
fail:
    return err && err->code ? err->code : REIN_ENOMEM;
}

void cli_parts_release(struct cli_parts *p)
{
    rein_agent_free(p->agent);
    rein_mcp_clients_free(p->mcp); /* before the registry that has their tools */
    rein_registry_free(p->reg);
    rein_provider_free(p->rules);
    rein_provider_free(p->provider);
    memset(p, 0, sizeof(*p));
}

int cli_conversation_option(const char *value, const char **out)
{
    if (!rein_store_id_is_valid(value))
        return cli_usage_error("'%s' is not a valid conversation id ([A-Za-z0-9_.-], at most 64 "
                               "characters)",
                               value);
    *out = value;
    return CLI_EXIT_OK;
}

rein_err cli_store_open(const char *url, const struct rein_store_opts *opts, rein_store **out,
                        rein_error *err)
{
    const char *env = getenv("REIN_STORE");

    if (!url)
        url = env && *env ? env : REIN_STORE_DEFAULT_URL;
    return rein_store_open(url, opts, out, err);
}

void cli_log_provider(const char *cmd, const rein_provider *p)
{
    const char *path = cli_config_path();

    rein_log(REIN_LOG_INFO, cmd, "provider %s, model %s%s%s%s", rein_provider_name(p),
             rein_provider_model(p) ? rein_provider_model(p) : "(none)", path ? " (config " : "",
             path ? path : "", path ? ")" : "");
}

void cli_json_add_provider(json_t *result, const rein_provider *p)
{
    json_t *meta = json_object_get(result, "meta");

    if (!json_is_object(result) || !p)
        return;
    if (!json_is_object(meta)) {
        meta = json_object();
        if (!meta || json_object_set_new(result, "meta", meta) != 0)
            return;
    }
    json_object_set_new(meta, "provider", json_string(rein_provider_name(p)));
    json_object_set_new(meta, "model",
                        rein_provider_model(p) ? json_string(rein_provider_model(p)) : json_null());
}
