/*
 * rein's configuration file, as the command reads it: the file named by --config, else by
 * REIN_CONFIG, read once per run and checked whole (the provider settings by the provider
 * module, each of "mcpServers" by the MCP client) before the command does anything. A file
 * that is missing, unreadable, not UTF-8, not JSON, or has a key nobody knows stops every
 * command with one line naming the file, line and column, and exit status 2: a setting that
 * is silently ignored would make rein answer with something the user did not configure.
 *
 * The command holds one configuration, so it lives here for the run; cli_config_release()
 * (main.c) frees it.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#define CONFIG_MAX_BYTES ((size_t)4 << 20)

static struct {
    char *path; /* new */
    char *text; /* new: the file's bytes */
    size_t len;
    json_t *doc; /* new reference */
    bool loaded;
} config;

static int refuse(const rein_error *err, const char *origin)
{
    fprintf(stderr, "rein: config: %s%s%s%s\n", err->msg, origin ? " (from " : "",
            origin ? origin : "", origin ? ")" : "");
    return CLI_EXIT_USAGE;
}

/* The position of the server entry (or its member) an MCP message names. */
static void locate_mcp(const char *name, const char *msg, int *line, int *column)
{
    char ptr[512], field[128];
    size_t n = 0, plen = strlen("mcpServers.") + strlen(name) + 1;

    snprintf(ptr, sizeof(ptr), "/mcpServers/");
    for (const char *k = name; *k && strlen(ptr) + 3 < sizeof(ptr); k++) {
        size_t at = strlen(ptr);
        if (*k == '~' || *k == '/')
            snprintf(ptr + at, sizeof(ptr) - at, "~%c", *k == '~' ? '0' : '1');
        else
            snprintf(ptr + at, sizeof(ptr) - at, "%c", *k);
    }
    *line = *column = 1;
    if (!rein_json_locate(config.text, config.len, "/mcpServers", line, column))
        return;
    (void)rein_json_locate(config.text, config.len, ptr, line, column);
    /* "mcpServers.fs.args[2]: ..." names a member of the entry: point at it when it is there. */
    if (strncmp(msg, "mcpServers.", 11) != 0 || strlen(msg) <= plen ||
        strncmp(msg + 11, name, strlen(name)) != 0 || msg[plen - 1] != '.')
        return;
    for (const char *p = msg + plen; *p && !strchr(":.[ ", *p) && n + 1 < sizeof(field); p++)
        field[n++] = *p;
    field[n] = '\0';
    if (n && strlen(ptr) + n + 2 < sizeof(ptr)) {
        size_t at = strlen(ptr);
        snprintf(ptr + at, sizeof(ptr) - at, "/%s", field);
        (void)rein_json_locate(config.text, config.len, ptr, line, column);
    }
}

/* Each mcpServers entry, read as the MCP client reads it (nothing is started). */
static rein_err check_mcp(rein_error *err)
{
    const json_t *servers = json_object_get(config.doc, "mcpServers");
    rein_mcp_clients *set;
    const char *name;
    json_t *entry;
    int line = 1, column = 1;
    rein_err rc = REIN_OK;

    if (!servers)
        return REIN_OK;
    if (!json_is_object(servers)) {
        (void)rein_json_locate(config.text, config.len, "/mcpServers", &line, &column);
        rein_error_set(err, REIN_EINVAL, "%s:%d:%d: mcpServers: must be an object of servers",
                       config.path, line, column);
        return REIN_EINVAL;
    }
    set = rein_mcp_clients_new();
    if (!set)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    json_object_foreach((json_t *)servers, name, entry)
    {
        rein_error_clear(err);
        rc = rein_mcp_clients_add(set, name, entry, err);
        if (rc) {
            locate_mcp(name, err->msg, &line, &column);
            err->line = line;
            err->column = column;
            rein_error_prefix(err, "%s:%d:%d: ", config.path, line, column);
            break;
        }
    }
    rein_mcp_clients_free(set);
    return rc;
}

int cli_config_load(const char *path, const char *origin)
{
    rein_provider_config *scratch;
    rein_error err = {0};
    rein_err rc;

    if (config.loaded)
        return CLI_EXIT_OK;
    if (!path || !path[0])
        return CLI_EXIT_OK; /* no file: flags and environment only */
    rein_error_clear(&err);
    config.path = rein_strdup(path);
    if (!config.path)
        return cli_usage_error("out of memory");
    rc = rein_read_file(path, CONFIG_MAX_BYTES, &config.text, &config.len, &err);
    if (rc) {
        if (rc == REIN_EINVAL)
            rein_error_set(&err, rc, "%s: is a directory, not a configuration file", path);
        return refuse(&err, origin);
    }
    /* The provider module checks the text whole and names the place of any problem. */
    scratch = rein_provider_config_new();
    if (!scratch)
        return cli_usage_error("out of memory");
    rc = rein_provider_config_load_text(scratch, config.text, config.len, path, &err);
    rein_provider_config_free(scratch);
    if (rc)
        return refuse(&err, origin);
    config.doc = rein_json_parse(config.text, config.len, 0, &err);
    if (!config.doc)
        return refuse(&err, origin);
    if (check_mcp(&err) != REIN_OK)
        return refuse(&err, origin);
    config.loaded = true;
    rein_log(REIN_LOG_DEBUG, "config", "read %s (%s)", path, origin ? origin : "--config");
    return CLI_EXIT_OK;
}

const json_t *cli_config_doc(void)
{
    return config.doc;
}

const char *cli_config_path(void)
{
    return config.loaded ? config.path : NULL;
}

void cli_config_release(void)
{
    json_decref(config.doc);
    rein_free(config.text);
    rein_free(config.path);
    memset(&config, 0, sizeof(config));
}

bool cli_is_protocol_file(const char *path)
{
    size_t n = strlen(path);
    char *text = NULL;
    json_t *doc;
    bool yes;

    if ((n > 5 && strcmp(path + n - 5, ".yaml") == 0) ||
        (n > 4 && strcmp(path + n - 4, ".yml") == 0))
        return true;
    if (rein_read_file(path, CONFIG_MAX_BYTES, &text, &n, NULL) != REIN_OK)
        return false;
    doc = rein_json_parse(text, n, 0, NULL);
    yes = json_object_get(doc, "protocols") != NULL;
    json_decref(doc);
    rein_free(text);
    return yes;
}
