/*
 * Azure OpenAI: the chat completions and Responses wires at an Azure OpenAI resource (the
 * presets "azure" and "azure-responses"). Only the address and the key's header differ from
 * OpenAI's; the bodies and replies are the same.
 *
 * The base URL is the resource endpoint (https://RESOURCE.openai.azure.com, or a proxy in
 * front of it):
 *   chat completions  {endpoint}/openai/deployments/{deployment}/chat/completions
 *                     ?api-version={api_version}   (deployment: the "deployment" setting,
 *                     else the model; api_version: the setting, else 2024-10-21, the GA one)
 *   Responses         {endpoint}/openai/v1/responses   (the v1 API takes no api-version;
 *                     one that is set is appended)
 * A base that already ends in /openai/v1 is the v1 API for both: the wire's path is appended
 * and the deployment goes as the body's model, as Azure's v1 API wants.
 *
 * The key goes in the "api-key" header (AZURE_OPENAI_API_KEY). A Microsoft Entra ID token
 * goes as "Authorization: Bearer": the setting "auth": "bearer", or, when no key is set, the
 * token in AZURE_OPENAI_AD_TOKEN.
 */
#include "provider_int.h"

#include <stdlib.h>
#include <string.h>

#define AZURE_API_VERSION "2024-10-21"

static bool ends_with(const char *s, size_t n, const char *tail)
{
    size_t m = strlen(tail);

    return n >= m && strncmp(s + n - m, tail, m) == 0;
}

/* The key (or Entra token) from the settings or the environment. */
static rein_err azure_key(rein_provider *p, rein_error *err)
{
    const char *env = p->cfg.api_key_env ? p->cfg.api_key_env : "AZURE_OPENAI_API_KEY";
    const char *v = getenv(env);

    if (!p->cfg.api_key && v && *v && !(p->cfg.api_key = rein_strdup(v)))
        return REIN_ENOMEM;
    if (!p->cfg.api_key && (v = getenv("AZURE_OPENAI_AD_TOKEN")) && *v) {
        p->cfg.api_key = rein_strdup(v);
        if (!p->cfg.api_key)
            return REIN_ENOMEM;
        p->cfg.auth_bearer = true;
    }
    if (!p->cfg.api_key)
        return rein_error_set(err, REIN_EINVAL,
                              "the %s provider needs a key: set %s (an api-key), "
                              "AZURE_OPENAI_AD_TOKEN (a Microsoft Entra ID token) or REIN_API_KEY",
                              p->cfg.preset->name, env);
    return REIN_OK;
}

rein_err rein__azure_open(rein_provider *p, rein_error *err)
{
    const char *base = p->cfg.base_url;
    const char *dep = p->cfg.deployment ? p->cfg.deployment : p->cfg.model;
    const char *ver = p->cfg.api_version;
    bool responses = p->wire == &rein__wire_responses;
    size_t n;
    rein_err rc;

    if (!dep)
        return rein_error_set(err, REIN_EINVAL,
                              "no deployment for the %s provider: set \"deployment\" (or the "
                              "model, REIN_MODEL or --model, to the deployment's name)",
                              p->cfg.preset->name);
    if (!base)
        return rein_error_set(err, REIN_EINVAL,
                              "the %s provider needs the resource endpoint as its base URL "
                              "(https://RESOURCE.openai.azure.com): set REIN_BASE_URL, "
                              "--base-url or \"base_url\"",
                              p->cfg.preset->name);
    if (strncmp(base, "http://", 7) != 0 && strncmp(base, "https://", 8) != 0)
        return rein_error_set(err, REIN_EINVAL, "the base URL must start with http:// or https://");
    for (const char *c = dep; *c; c++) {
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '-' || *c == '_' || *c == '.'))
            return rein_error_set(err, REIN_EINVAL,
                                  "the deployment name \"%.64s\" may hold only letters, digits, "
                                  "'-', '_' and '.'",
                                  dep);
    }
    n = strlen(base);
    while (n > 0 && base[n - 1] == '/')
        n--;
    /* The v1 API names the deployment in the body's model. */
    if (ends_with(base, n, "/openai/v1") && p->cfg.deployment) {
        rein_free(p->cfg.model);
        p->cfg.model = NULL;
    }
    if (!p->cfg.model && !(p->cfg.model = rein_strdup(dep)))
        return REIN_ENOMEM;
    rc = azure_key(p, err);
    if (rc)
        return rc;
    if (ends_with(base, n, "/openai/v1"))
        p->endpoint = rein_asprintf("%.*s%s%s%s", (int)n, base, p->wire->path,
                                    ver ? "?api-version=" : "", ver ? ver : "");
    else if (responses)
        p->endpoint = rein_asprintf("%.*s/openai/v1/responses%s%s", (int)n, base,
                                    ver ? "?api-version=" : "", ver ? ver : "");
    else
        p->endpoint = rein_asprintf("%.*s/openai/deployments/%s/chat/completions?api-version=%s",
                                    (int)n, base, dep, ver ? ver : AZURE_API_VERSION);
    return p->endpoint ? REIN_OK : REIN_ENOMEM;
}
