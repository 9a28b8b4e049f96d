/*
 * Environment handling of the runners that start something outside rein.
 *
 * Secrets stay out of manifests: a manifest writes "${GITHUB_TOKEN}" and the value is read
 * from rein's environment when the manifest is loaded (rein__expand_env, core). And secrets
 * stay out of skills that did not ask for them: a process skill inherits rein's environment minus anything that looks like
 * a credential (provider API keys above all), so a third-party skill cannot read the key of
 * the model rein talks to unless its manifest names it.
 */
#include "skills_int.h"

#include <string.h>

static bool ends_with(const char *name, size_t len, const char *suffix)
{
    size_t slen = strlen(suffix);

    return len >= slen && strncmp(name + len - slen, suffix, slen) == 0;
}

bool rein__skills_env_is_secret(const char *entry)
{
    static const char *const suffixes[] = {"_API_KEY",  "_API_KEYS", "_TOKEN",  "_SECRET",
                                           "_PASSWORD", "_PASSWD",   "_APIKEY", "_KEY"};
    const char *eq = strchr(entry, '=');
    size_t len = eq ? (size_t)(eq - entry) : strlen(entry);

    for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
        if (ends_with(entry, len, suffixes[i]))
            return true;
    }
    return false;
}
