/*
 * Environment handling shared by the runners that start or call something outside rein.
 *
 * Secrets stay out of manifests: a manifest writes "${GITHUB_TOKEN}" and the value is read
 * from rein's environment when the manifest is loaded. And secrets stay out of skills that did
 * not ask for them: a process skill inherits rein's environment minus anything that looks like
 * a credential (provider API keys above all), so a third-party skill cannot read the key of
 * the model rein talks to unless its manifest names it.
 */
#include "skills_int.h"

#include <stdlib.h>
#include <string.h>

char *rein__skills_expand_env(const char *prefix, const char *value)
{
    struct rein_buf b;

    rein_buf_init(&b, 64 << 10);
    if (rein_buf_adds(&b, prefix))
        goto fail;
    for (const char *p = value; *p;) {
        const char *close = p[0] == '$' && p[1] == '{' ? strchr(p + 2, '}') : NULL;
        if (close) {
            char var[256];
            size_t n = (size_t)(close - p - 2);
            const char *v = NULL;
            if (n < sizeof(var)) {
                memcpy(var, p + 2, n);
                var[n] = '\0';
                v = getenv(var);
            }
            if (v && rein_buf_adds(&b, v))
                goto fail;
            p = close + 1;
        } else if (rein_buf_addch(&b, *p++)) {
            goto fail;
        }
    }
    return rein_buf_detach(&b, NULL);
fail:
    rein_buf_release(&b);
    return NULL;
}

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
