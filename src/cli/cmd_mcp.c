/*
 * `rein mcp`: rein as an MCP server over stdio, and the MCP servers rein is a client of.
 *
 *   rein mcp serve [--skills DIR]... [--root DIR]... [--config FILE]
 *       Serves the registry's tools (built-in skills, REIN_SKILLS_PATH, --skills folders and
 *       the tools of the MCP servers in the configuration) to one MCP client on stdin/stdout.
 *       Logs go to stderr.
 *
 * `rein serve` offers the same at /mcp through cli_mcp_attach(), configured from the
 * environment: REIN_SKILLS_PATH, REIN_CONFIG / REIN_MCP_CONFIG (mcpServers), and
 * REIN_MCP_ALLOWED_HOSTS, REIN_MCP_SSE_CLOSE_MS, REIN_MCP_SSE_RETRY_MS, REIN_MCP_PROGRESS_MS.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_DIRS 32

struct mcp_opts {
    const char *skills[MAX_DIRS];
    size_t nskills;
    const char *roots[MAX_DIRS + 1];
    size_t nroots;
    const char *config;
    const char *args[4];
    size_t nargs;
};

static void mcp_usage(FILE *out)
{
    fprintf(
        out,
        "usage: rein mcp serve [--skills DIR]... [--root DIR]... [--config FILE]\n\n"
        "  serve   offer rein's tools to one MCP client over stdin/stdout (protocol\n"
        "          2025-11-25, 2025-06-18, 2025-03-26); every call goes through rein's call\n"
        "          pipeline. Tools: the built-in skills, REIN_SKILLS_PATH, --skills folders.\n\n"
        "  --skills DIR   load external skills from DIR (repeatable)\n"
        "  --root DIR     a folder file_search and log_transform may read (repeatable)\n"
        "  --config FILE  a JSON config file (default: REIN_MCP_CONFIG, then REIN_CONFIG)\n\n"
        "`rein serve` serves the same tools at /mcp (Streamable HTTP).\n");
}

static int parse_opts(int argc, char **argv, struct mcp_opts *o)
{
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_flag(a, "-h", "--help")) {
            mcp_usage(stdout);
            return -1;
        } else if (cli_is_flag(a, NULL, "--skills") || cli_is_flag(a, NULL, "--root")) {
            bool skills = a[2] == 's';
            if (i + 1 >= argc)
                return cli_usage_error("%s needs a folder", a);
            if ((skills ? o->nskills : o->nroots) >= MAX_DIRS)
                return cli_usage_error("too many %s folders", a);
            if (skills)
                o->skills[o->nskills++] = argv[++i];
            else
                o->roots[o->nroots++] = argv[++i];
        } else if (cli_is_flag(a, NULL, "--config")) {
            if (i + 1 >= argc)
                return cli_usage_error("--config needs a file");
            o->config = argv[++i];
        } else if (a[0] == '-' && a[1] == '-') {
            return cli_usage_error("unknown option %s (see rein mcp --help)", a);
        } else if (o->nargs < sizeof(o->args) / sizeof(o->args[0])) {
            o->args[o->nargs++] = a;
        } else {
            return cli_usage_error("unexpected argument '%s'", a);
        }
    }
    return CLI_EXIT_OK;
}

/* The registry: built-in skills, then REIN_SKILLS_PATH, then the --skills folders. */
static rein_registry *load_registry(const struct mcp_opts *o, rein_error *err)
{
    struct rein_skills_config cfg = {.roots = o && o->nroots ? o->roots : NULL};
    const char *env = getenv("REIN_SKILLS_PATH");
    rein_registry *reg = rein_registry_new(err);

    if (!reg || rein_skills_register_builtins(reg, &cfg, err) ||
        (env && *env && rein_registry_load_path(reg, env, NULL, err)))
        goto fail;
    for (size_t i = 0; o && i < o->nskills; i++) {
        if (rein_registry_load_dir(reg, o->skills[i], NULL, err))
            goto fail;
    }
    return reg;
fail:
    rein_registry_free(reg);
    return NULL;
}

static int64_t env_ms(const char *name, int64_t fallback)
{
    const char *v = getenv(name);
    char *end = NULL;
    long long n;

    if (!v || !*v)
        return fallback;
    n = strtoll(v, &end, 10);
    return *end ? fallback : (int64_t)n;
}

static void server_opts(struct rein_mcp_server_opts *so)
{
    memset(so, 0, sizeof(*so));
    so->allowed_hosts = getenv("REIN_MCP_ALLOWED_HOSTS");
    so->sse_close_ms = env_ms("REIN_MCP_SSE_CLOSE_MS", 0);
    so->sse_retry_ms = env_ms("REIN_MCP_SSE_RETRY_MS", 0);
    so->progress_interval_ms = env_ms("REIN_MCP_PROGRESS_MS", 0);
}

static int cmd_mcp_serve(const struct mcp_opts *o)
{
    struct rein_mcp_server_opts so;
    rein_registry *reg;
    rein_mcp_server *srv;
    rein_error err;
    int rc = CLI_EXIT_OK;

    rein_error_clear(&err);
    reg = load_registry(o, &err);
    if (!reg) {
        cli_print_error(&err);
        return CLI_EXIT_USAGE;
    }
    server_opts(&so);
    srv = rein_mcp_server_new(reg, &so, &err);
    if (!srv || rein_mcp_server_run_stdio(srv, STDIN_FILENO, STDOUT_FILENO, &err) != REIN_OK) {
        cli_print_error(&err);
        rc = CLI_EXIT_FAIL;
    }
    rein_mcp_server_free(srv);
    rein_registry_free(reg);
    return rc;
}

int cmd_mcp(int argc, char **argv)
{
    struct mcp_opts o = {0};
    int rc;

    if (argc < 2 || cli_is_flag(argv[1], "-h", "--help")) {
        mcp_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_EXIT_USAGE : CLI_EXIT_OK;
    }
    rc = parse_opts(argc, argv, &o);
    if (rc != 0)
        return rc < 0 ? CLI_EXIT_OK : rc;
    if (strcmp(argv[1], "serve") == 0)
        return cmd_mcp_serve(&o);
    return cli_usage_error("unknown mcp command '%s' (see rein mcp --help)", argv[1]);
}

/* ---- `rein serve` ------------------------------------------------------------------------ */

struct cli_mcp {
    rein_registry *reg;
    rein_mcp_server *srv;
};

struct cli_mcp *cli_mcp_attach(rein_server *http, rein_error *err)
{
    struct cli_mcp *m = calloc(1, sizeof(*m));
    struct rein_mcp_server_opts so;

    if (!m) {
        rein_error_set(err, REIN_ENOMEM, "out of memory");
        return NULL;
    }
    server_opts(&so);
    m->reg = load_registry(NULL, err);
    if (!m->reg)
        goto fail;
    m->srv = rein_mcp_server_new(m->reg, &so, err);
    if (!m->srv || rein_mcp_server_add_routes(m->srv, http, err) != REIN_OK)
        goto fail;
    return m;
fail:
    cli_mcp_detach(m);
    return NULL;
}

void cli_mcp_detach(struct cli_mcp *m)
{
    if (!m)
        return;
    rein_mcp_server_free(m->srv);
    rein_registry_free(m->reg);
    free(m);
}
