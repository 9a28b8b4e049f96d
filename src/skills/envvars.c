/*
 * Environment handling of the runners that start something outside rein.
 *
 * Secrets by allowlist. A process skill does not inherit rein's environment: it gets a
 * documented base (rein__skills_base_env: PATH, HOME, LANG, LANGUAGE and the LC_* variables,
 * TZ, TMPDIR, USER, LOGNAME, SHELL, TERM and the sanitizer options; PATH defaults to
 * /usr/local/bin:/usr/bin:/bin), the variables
 * its manifest lists in the runner's "env_allow" (passed through as they are), the manifest's
 * own "env" values, and the call's REIN_TOOL, REIN_CALL_ID and REIN_TRACE_ID. A manifest's
 * "${NAME}" (process env values, HTTP header values) reads only a variable its env_allow
 * names. rein's own variables (REIN_*: the API keys, the store URL with its password) reach no
 * skill in any of these ways. Before, everything but names that looked like credentials was
 * inherited, and DATABASE_URL, PGPASSWORD, GITHUB_PAT or a lower-case openai_api_key passed.
 */
#include "skills_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

/* The sanitizer runtime options hold no secrets and let skills built like rein's own test
 * build run the same way. */
const char *const rein__skills_base_env[] = {
    "PATH",  "HOME", "LANG",         "LANGUAGE",      "TZ",           "TMPDIR", "USER", "LOGNAME",
    "SHELL", "TERM", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", NULL};

bool rein__skills_env_is_reins(const char *name, size_t len)
{
    return len >= 5 && strncmp(name, "REIN_", 5) == 0;
}

/* True when the variable name (len bytes) is in allow (a JSON array of names). */
static bool allowed(const json_t *allow, const char *name, size_t len)
{
    size_t i;
    json_t *v;

    json_array_foreach(allow, i, v)
    {
        const char *a = json_string_value(v);
        if (a && strlen(a) == len && strncmp(a, name, len) == 0)
            return true;
    }
    return false;
}

/* A manifest's ${VAR} reads only what its env_allow names, never one of rein's own (ud: the
 * allow array). (Operator configuration, mcpServers, expands without this check, reading any
 * variable.) */
static rein_err check_allowed(const char *name, size_t n, void *ud, rein_error *err)
{
    bool reins = rein__skills_env_is_reins(name, n);

    if (n < 256 && !reins && allowed(ud, name, n))
        return REIN_OK;
    return rein_error_set(err, REIN_EDENIED, "${%.*s} may not be read: %s", (int)(n < 64 ? n : 64),
                          name,
                          reins ? "rein's own variables (REIN_*) never reach a skill"
                                : "list the variable in the runner's \"env_allow\" to "
                                  "hand it to the skill");
}

rein_err rein__skills_expand_env_allowed(const char *prefix, const char *value, const json_t *allow,
                                         char **out, rein_error *err)
{
    return rein__expand_env_checked(prefix, value, check_allowed, (void *)allow, out, err);
}

rein_err rein__skills_env_allow_check(const json_t *allow, rein_error *err)
{
    size_t i;
    json_t *v;

    json_array_foreach(allow, i, v)
    {
        const char *name = json_string_value(v);
        if (rein__skills_env_is_reins(name, strlen(name)))
            return rein_error_set(err, REIN_ESCHEMA,
                                  "/env_allow/%zu: %s is rein's own variable; rein's variables "
                                  "(REIN_*) are never handed to a skill",
                                  i, name);
    }
    return REIN_OK;
}

/* True when entry ("NAME=value") names a variable of the base or of allow. */
static bool passed(const char *entry, const json_t *allow)
{
    size_t len = strcspn(entry, "=");

    if (rein__skills_env_is_reins(entry, len))
        return false;
    if (len > 3 && strncmp(entry, "LC_", 3) == 0)
        return true;
    for (size_t i = 0; rein__skills_base_env[i]; i++) {
        if (strlen(rein__skills_base_env[i]) == len &&
            strncmp(entry, rein__skills_base_env[i], len) == 0)
            return true;
    }
    return allowed(allow, entry, len);
}

/* True when entry sets a variable that one of list (n entries) sets too. */
static bool overridden(const char *entry, char *const *list, size_t n)
{
    size_t klen = strcspn(entry, "=");

    for (size_t i = 0; i < n; i++) {
        if (list[i] && strncmp(list[i], entry, klen) == 0 && list[i][klen] == '=')
            return true;
    }
    return false;
}

const char **rein__skills_child_env(const json_t *allow, char *const *set, size_t nset)
{
    size_t n = 0, total = nset + 2;
    const char **env;
    bool has_path = false;

    for (char **e = environ; e && *e; e++)
        total++;
    env = rein_calloc(total, sizeof(*env));
    if (!env)
        return NULL;
    for (char **e = environ; e && *e; e++) {
        if (!passed(*e, allow) || overridden(*e, set, nset))
            continue;
        has_path = has_path || strncmp(*e, "PATH=", 5) == 0;
        env[n++] = *e;
    }
    for (size_t i = 0; i < nset; i++) {
        has_path = has_path || strncmp(set[i], "PATH=", 5) == 0;
        env[n++] = set[i];
    }
    if (!has_path)
        env[n++] = "PATH=/usr/local/bin:/usr/bin:/bin";
    env[n] = NULL;
    return env;
}
