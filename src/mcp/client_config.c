/*
 * The MCP client's configuration: one mcpServers entry read into a struct
 * rein__mcp_conn_config (a program to start, or a Streamable HTTP URL, with its limits). Every
 * problem is named with the entry and the member at fault.
 */
#include "mcp/mcp_int.h"
#include "core/internal.h"

#include <string.h>
#include <strings.h>

#define DEFAULT_CALL_TIMEOUT_MS    60000
#define DEFAULT_MAX_TIMEOUT_MS     600000
#define DEFAULT_CONNECT_TIMEOUT_MS 30000
#define DEFAULT_MAX_MESSAGE        ((size_t)16 << 20)

void rein__mcp_conn_config_free(struct rein__mcp_conn_config *cfg)
{
    if (!cfg)
        return;
    for (char **p = cfg->argv; p && *p; p++)
        rein_free(*p);
    for (char **p = cfg->env; p && *p; p++)
        rein_free(*p);
    for (char **p = cfg->headers; p && *p; p++)
        rein_free(*p);
    rein_free(cfg->argv);
    rein_free(cfg->env);
    rein_free(cfg->headers);
    rein_free(cfg->name);
    rein_free(cfg->cwd);
    rein_free(cfg->url);
    json_decref(cfg->oauth);
    rein_free(cfg);
}

static rein_err parse_ms(const char *name, const json_t *entry, const char *key, int64_t *out,
                         rein_error *err)
{
    const json_t *v = json_object_get(entry, key);

    if (!v)
        return REIN_OK;
    if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 86400000)
        return rein_error_set(err, REIN_EINVAL,
                              "mcpServers.%s.%s: must be milliseconds from 1 to 86400000", name,
                              key);
    *out = (int64_t)json_integer_value(v);
    return REIN_OK;
}

static bool strings_object(const json_t *v)
{
    const char *key;
    json_t *item;

    if (!json_is_object(v))
        return false;
    json_object_foreach((json_t *)v, key, item)
    {
        if (!json_is_string(item))
            return false;
    }
    return true;
}

static rein_err parse_stdio(struct rein__mcp_conn_config *cfg, const json_t *entry,
                            const char *base_dir, rein_error *err)
{
    const json_t *cmd = json_object_get(entry, "command"), *args = json_object_get(entry, "args");
    const json_t *env = json_object_get(entry, "env"), *cwd = json_object_get(entry, "cwd");
    const char *key;
    json_t *v;
    size_t i, n = 1;

    if (!json_is_string(cmd) || !json_string_value(cmd)[0])
        return rein_error_set(err, REIN_EINVAL, "mcpServers.%s.command: must be a program name",
                              cfg->name);
    if (args && !json_is_array(args))
        return rein_error_set(err, REIN_EINVAL, "mcpServers.%s.args: must be an array of strings",
                              cfg->name);
    json_array_foreach(args, i, v)
    {
        if (!json_is_string(v))
            return rein_error_set(err, REIN_EINVAL, "mcpServers.%s.args[%zu]: must be a string",
                                  cfg->name, i);
        n++;
    }
    if (env && !strings_object(env))
        return rein_error_set(err, REIN_EINVAL,
                              "mcpServers.%s.env: must be an object of string values", cfg->name);
    if (cwd && !json_is_string(cwd))
        return rein_error_set(err, REIN_EINVAL, "mcpServers.%s.cwd: must be a folder", cfg->name);
    cfg->argv = rein_calloc(n + 1, sizeof(char *));
    cfg->env = rein_calloc(json_object_size(env) + 1, sizeof(char *));
    if (!cfg->argv || !cfg->env)
        goto nomem;
    /* The command is looked up in PATH by posix_spawnp; no shell ever sees it. */
    cfg->argv[0] = rein_strdup(json_string_value(cmd));
    if (!cfg->argv[0])
        goto nomem;
    json_array_foreach(args, i, v)
    {
        cfg->argv[i + 1] = rein_strdup(json_string_value(v));
        if (!cfg->argv[i + 1])
            goto nomem;
    }
    i = 0;
    json_object_foreach((json_t *)env, key, v)
    {
        if (!key[0] || strchr(key, '='))
            return rein_error_set(err, REIN_EINVAL,
                                  "mcpServers.%s.env: \"%s\" is not a variable name", cfg->name,
                                  key);
        cfg->env[i] = rein_asprintf("%s=", key);
        if (cfg->env[i]) {
            char *full = rein__expand_env(cfg->env[i], json_string_value(v));
            rein_free(cfg->env[i]);
            cfg->env[i] = full;
        }
        if (!cfg->env[i++])
            goto nomem;
    }
    if (cwd) {
        const char *dir = json_string_value(cwd);
        cfg->cwd =
            dir[0] == '/' || !base_dir ? rein_strdup(dir) : rein_asprintf("%s/%s", base_dir, dir);
        if (!cfg->cwd)
            goto nomem;
    }
    return REIN_OK;
nomem:
    return rein_error_set(err, REIN_ENOMEM, "out of memory reading mcpServers.%s", cfg->name);
}

/* True when v is NULL (not given) or one of the n strings in list. */
static bool absent_or_one_of(const char *v, const char *const *list, size_t n)
{
    for (size_t i = 0; v && i < n; i++) {
        if (strcmp(v, list[i]) == 0)
            return true;
    }
    return !v;
}

/* What the "oauth" members must say together (cfg->oauth holds them). */
static rein_err oauth_check(struct rein__mcp_conn_config *cfg, rein_error *err)
{
    const json_t *o = cfg->oauth;
    const char *grant = json_string_value(json_object_get(o, "grant"));
    const char *method = json_string_value(json_object_get(o, "token_endpoint_auth_method"));
    const char *alg = json_string_value(json_object_get(o, "signing_algorithm"));
    static const char *const grants[] = {"authorization_code", "client_credentials", "id_jag"};
    static const char *const methods[] = {"none", "client_secret_basic", "client_secret_post",
                                          "private_key_jwt"};

    if (!absent_or_one_of(grant, grants, REIN_ARRAY_SIZE(grants)))
        return rein_error_set(err, REIN_EINVAL,
                              "mcpServers.%s.oauth.grant: \"authorization_code\", "
                              "\"client_credentials\" or \"id_jag\"",
                              cfg->name);
    if (!absent_or_one_of(method, methods, REIN_ARRAY_SIZE(methods)))
        return rein_error_set(err, REIN_EINVAL,
                              "mcpServers.%s.oauth.token_endpoint_auth_method: none, "
                              "client_secret_basic, client_secret_post or private_key_jwt",
                              cfg->name);
    if (method && strcmp(method, "private_key_jwt") == 0 && !json_object_get(o, "private_key_file"))
        return rein_error_set(err, REIN_EINVAL,
                              "mcpServers.%s.oauth: private_key_jwt needs private_key_file (a PEM "
                              "private key, mode 0600)",
                              cfg->name);
    if (alg && strcmp(alg, "ES256") != 0 && strcmp(alg, "RS256") != 0)
        return rein_error_set(err, REIN_EINVAL,
                              "mcpServers.%s.oauth.signing_algorithm: ES256 or RS256", cfg->name);
    if (grant && strcmp(grant, "id_jag") == 0 &&
        (!json_object_get(o, "idp_token_endpoint") || !json_object_get(o, "idp_client_id") ||
         !json_object_get(o, "client_id") ||
         (!json_object_get(o, "id_token") && !json_object_get(o, "id_token_file"))))
        return rein_error_set(err, REIN_EINVAL,
                              "mcpServers.%s.oauth: grant id_jag needs client_id, "
                              "idp_token_endpoint, idp_client_id, and id_token or id_token_file",
                              cfg->name);
    return REIN_OK;
}

/* "oauth": false, or {client_id?, client_secret?, client_metadata_url?, scope?, grant?,
 * token_endpoint_auth_method?, private_key_file?, signing_algorithm?, key_id?,
 * idp_token_endpoint?, idp_client_id?, idp_client_secret?, id_token?, id_token_file?,
 * redirect_port?, login_timeout_ms?}; strings take ${VAR}. */
static rein_err parse_oauth(struct rein__mcp_conn_config *cfg, const json_t *v, rein_error *err)
{
    static const char *const strings[] = {"client_id",
                                          "client_secret",
                                          "client_metadata_url",
                                          "scope",
                                          "grant",
                                          "token_endpoint_auth_method",
                                          "private_key_file",
                                          "signing_algorithm",
                                          "key_id",
                                          "idp_token_endpoint",
                                          "idp_client_id",
                                          "idp_client_secret",
                                          "id_token",
                                          "id_token_file"};
    const char *key;
    json_t *item;

    if (!v)
        return REIN_OK;
    if (json_is_false(v)) {
        cfg->oauth_off = true;
        return REIN_OK;
    }
    if (!json_is_object(v))
        return rein_error_set(err, REIN_EINVAL, "mcpServers.%s.oauth: must be an object or false",
                              cfg->name);
    if (!(cfg->oauth = json_object()))
        return rein_error_set(err, REIN_ENOMEM, "out of memory reading mcpServers.%s", cfg->name);
    json_object_foreach((json_t *)v, key, item)
    {
        bool known = false, text = false;
        for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++)
            text = text || strcmp(key, strings[i]) == 0;
        known = text || strcmp(key, "redirect_port") == 0 || strcmp(key, "login_timeout_ms") == 0;
        if (!known)
            return rein_error_set(err, REIN_EINVAL, "mcpServers.%s.oauth.%s: unknown member",
                                  cfg->name, key);
        if (text) {
            char *full;
            if (!json_is_string(item) || strpbrk(json_string_value(item), "\r\n"))
                return rein_error_set(err, REIN_EINVAL,
                                      "mcpServers.%s.oauth.%s: must be a string on one line",
                                      cfg->name, key);
            full = rein__expand_env("", json_string_value(item));
            if (!full || json_object_set_new(cfg->oauth, key, json_string(full))) {
                rein_free(full);
                return rein_error_set(err, REIN_ENOMEM, "out of memory");
            }
            rein_free(full);
            continue;
        }
        if (!json_is_integer(item) || json_integer_value(item) < 0 ||
            json_integer_value(item) > (strcmp(key, "redirect_port") == 0 ? 65535 : 86400000))
            return rein_error_set(
                err, REIN_EINVAL, "mcpServers.%s.oauth.%s: must be %s", cfg->name, key,
                strcmp(key, "redirect_port") == 0 ? "a port (0 to 65535)" : "milliseconds");
        if (json_object_set(cfg->oauth, key, item))
            return rein_error_set(err, REIN_ENOMEM, "out of memory");
    }
    return oauth_check(cfg, err);
}

static rein_err parse_http(struct rein__mcp_conn_config *cfg, const json_t *entry, rein_error *err)
{
    const char *url = json_string_value(json_object_get(entry, "url"));
    const json_t *headers = json_object_get(entry, "headers");
    const json_t *token = json_object_get(entry, "bearer_token");
    const char *key;
    json_t *v;
    size_t i = 0;

    if (!url || (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) ||
        strpbrk(url, " \r\n"))
        return rein_error_set(err, REIN_EINVAL,
                              "mcpServers.%s.url: must be an http:// or https:// URL", cfg->name);
    if (headers && !strings_object(headers))
        return rein_error_set(err, REIN_EINVAL,
                              "mcpServers.%s.headers: must be an object of string values",
                              cfg->name);
    if (token && !json_is_string(token))
        return rein_error_set(err, REIN_EINVAL, "mcpServers.%s.bearer_token: must be a string",
                              cfg->name);
    cfg->http = true;
    cfg->url = rein_strdup(url);
    cfg->headers = rein_calloc(json_object_size(headers) + 2, sizeof(char *));
    if (!cfg->url || !cfg->headers)
        goto nomem;
    json_object_foreach((json_t *)headers, key, v)
    {
        char prefix[300];
        if (!key[0] || strpbrk(key, ": \r\n") || strlen(key) > 200 ||
            strpbrk(json_string_value(v), "\r\n"))
            return rein_error_set(err, REIN_EINVAL,
                                  "mcpServers.%s.headers.%s: header names are single tokens and "
                                  "values have no line breaks",
                                  cfg->name, key);
        snprintf(prefix, sizeof(prefix), "%s: ", key);
        cfg->headers[i] = rein__expand_env(prefix, json_string_value(v));
        if (!cfg->headers[i++])
            goto nomem;
    }
    for (size_t k = 0; k < i; k++)
        cfg->oauth_off = cfg->oauth_off || strncasecmp(cfg->headers[k], "Authorization:", 14) == 0;
    if (token) {
        cfg->oauth_off = true;
        if (strpbrk(json_string_value(token), "\r\n"))
            return rein_error_set(err, REIN_EINVAL,
                                  "mcpServers.%s.bearer_token: must not hold line breaks",
                                  cfg->name);
        cfg->headers[i] = rein__expand_env("Authorization: Bearer ", json_string_value(token));
        if (!cfg->headers[i])
            goto nomem;
    }
    return parse_oauth(cfg, json_object_get(entry, "oauth"), err);
nomem:
    return rein_error_set(err, REIN_ENOMEM, "out of memory reading mcpServers.%s", cfg->name);
}

rein_err rein__mcp_conn_config_parse(const char *name, const json_t *entry, const char *base_dir,
                                     struct rein__mcp_conn_config **out, rein_error *err)
{
    const char *type = json_string_value(json_object_get(entry, "type"));
    struct rein__mcp_conn_config *cfg;
    bool has_cmd, has_url;
    rein_err rc;

    *out = NULL;
    if (!name || !name[0])
        return rein_error_set(err, REIN_EINVAL, "mcpServers: a server needs a name");
    if (!json_is_object(entry))
        return rein_error_set(err, REIN_EINVAL, "mcpServers.%s: must be an object", name);
    has_cmd = json_object_get(entry, "command") != NULL;
    has_url = json_object_get(entry, "url") != NULL;
    if (type && strcmp(type, "stdio") != 0 && strcmp(type, "http") != 0 &&
        strcmp(type, "streamable-http") != 0 && strcmp(type, "streamableHttp") != 0 &&
        strcmp(type, "sse") != 0)
        return rein_error_set(err, REIN_EINVAL,
                              "mcpServers.%s.type: \"%s\" is not supported; rein speaks stdio, "
                              "Streamable HTTP (\"http\") and the legacy HTTP+SSE (\"sse\")",
                              name, type);
    if (has_cmd == has_url)
        return rein_error_set(err, REIN_EINVAL,
                              "mcpServers.%s: give either \"command\" (a program to start) or "
                              "\"url\" (a Streamable HTTP endpoint)",
                              name);
    cfg = rein_calloc(1, sizeof(*cfg));
    if (!cfg || !(cfg->name = rein_strdup(name))) {
        rein_free(cfg);
        return rein_error_set(err, REIN_ENOMEM, "out of memory reading mcpServers.%s", name);
    }
    cfg->timeout_ms = DEFAULT_CALL_TIMEOUT_MS;
    cfg->max_timeout_ms = DEFAULT_MAX_TIMEOUT_MS;
    cfg->connect_timeout_ms = DEFAULT_CONNECT_TIMEOUT_MS;
    cfg->max_message_bytes = DEFAULT_MAX_MESSAGE;
    rc = has_cmd ? parse_stdio(cfg, entry, base_dir, err) : parse_http(cfg, entry, err);
    if (!rc && type && strcmp(type, "sse") == 0) {
        if (has_cmd)
            rc = rein_error_set(err, REIN_EINVAL,
                                "mcpServers.%s: type \"sse\" needs a \"url\", not a command", name);
        /* The legacy transport has no OAuth flow: credentials come from headers. */
        cfg->http = false;
        cfg->sse = true;
        cfg->oauth_off = true;
    }
    if (!rc)
        rc = parse_ms(name, entry, "timeout_ms", &cfg->timeout_ms, err);
    if (!rc)
        rc = parse_ms(name, entry, "max_timeout_ms", &cfg->max_timeout_ms, err);
    if (!rc)
        rc = parse_ms(name, entry, "connect_timeout_ms", &cfg->connect_timeout_ms, err);
    /* A call that keeps reporting progress may run up to max_timeout_ms: never less than the
     * silence it is allowed. */
    if (!rc && cfg->max_timeout_ms < cfg->timeout_ms)
        cfg->max_timeout_ms = json_object_get(entry, "max_timeout_ms") ? cfg->timeout_ms
                              : cfg->timeout_ms < 8640000              ? cfg->timeout_ms * 10
                                                                       : 86400000;
    if (!rc && json_object_get(entry, "max_message_bytes")) {
        const json_t *v = json_object_get(entry, "max_message_bytes");
        if (!json_is_integer(v) || json_integer_value(v) < 1024 ||
            json_integer_value(v) > ((json_int_t)1 << 30))
            rc =
                rein_error_set(err, REIN_EINVAL,
                               "mcpServers.%s.max_message_bytes: must be 1024 to 1073741824", name);
        else
            cfg->max_message_bytes = (size_t)json_integer_value(v);
    }
    if (rc) {
        rein__mcp_conn_config_free(cfg);
        return rc;
    }
    *out = cfg;
    return REIN_OK;
}
