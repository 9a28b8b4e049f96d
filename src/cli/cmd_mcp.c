/*
 * `rein mcp`: rein as an MCP server over stdio, and the MCP servers rein is a client of.
 *
 *   rein mcp serve [--skills DIR]... [--root DIR]... [--config FILE]
 *       Serves the registry's tools (built-in skills, REIN_SKILLS_PATH, --skills folders and
 *       the tools of the MCP servers in the configuration) to one MCP client on stdin/stdout.
 *       Logs go to stderr.
 *   rein mcp list [--config FILE] [--url URL [--name NAME]] [--json]
 *       Starts the configured MCP servers (and the one at URL) and shows each one's state and
 *       its tools under the names rein gives them. Exit 1 when a server is not ready.
 *   rein mcp call [--config FILE] [--url URL [--name NAME]] TOOL ['ARGS_JSON'] [--timeout MS]
 *       Calls a tool through the call pipeline and prints the normalized result. TOOL is the
 *       name rein gives it (server__tool), or with --url the server's own name for it.
 *   rein mcp login [--config FILE] [--url URL [--name NAME]] NAME [--timeout MS]
 *       OAuth for an HTTP server: forgets its stored token, prints the authorization address
 *       (opened with REIN_MCP_OAUTH_OPEN or xdg-open when possible), waits for the browser's
 *       redirect on 127.0.0.1 and stores the token (docs/decisions/0024).
 *
 * `rein mcp list|call` run the browser flow too when stdin is a terminal or
 * REIN_MCP_OAUTH_OPEN is set; otherwise a server without a stored token fails, naming
 * `rein mcp login`.
 * `rein serve` offers the same at /mcp through cli_mcp_attach(), configured from the
 * environment: REIN_SKILLS_PATH, REIN_CONFIG / REIN_MCP_CONFIG (mcpServers), and
 * REIN_MCP_ALLOWED_HOSTS, REIN_MCP_SSE_CLOSE_MS, REIN_MCP_SSE_RETRY_MS, REIN_MCP_PROGRESS_MS.
 */
#include "cli.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct mcp_opts {
    struct cli_setup setup; /* the tool folders, --config, --json */
    const char *url;
    const char *name;
    int64_t timeout_ms;
    const char *elicit; /* mcp call: how the server's forms are answered (NULL: not offered) */
    const char *args[2];
    unsigned nargs;
};

#define MCP_COMMON_HELP                                                                            \
    "  --config FILE  rein's configuration file, whose \"mcpServers\" name the servers\n"          \
    "                 (default: REIN_MCP_CONFIG, then REIN_CONFIG)\n"                              \
    "  --url URL      also use the Streamable HTTP server at URL, named --name\n"                  \
    "                 (default \"remote\")\n"

static void mcp_usage(FILE *out)
{
    fprintf(out,
            "usage: rein mcp serve [--skills DIR]... [--root DIR]... [--config FILE]\n"
            "       rein mcp list [--config FILE] [--url URL [--name NAME]] [--json]\n"
            "       rein mcp call [--config FILE] [--url URL [--name NAME]] TOOL ['ARGS_JSON'|-]\n"
            "                     [--timeout DURATION]\n"
            "       rein mcp login [--config FILE] [--url URL [--name NAME]] NAME\n\n"
            "  serve   offer rein's tools to one MCP client over stdin/stdout (protocol\n"
            "          2025-11-25, 2025-06-18, 2025-03-26); every call goes through rein's call\n"
            "          pipeline. Tools: the built-in skills, REIN_SKILLS_PATH, --skills folders\n"
            "          and the tools of the configured MCP servers.\n"
            "  list    start the configured MCP servers; show their state and tools\n"
            "  call    call a tool (server__tool, or with --url the server's own tool name)\n"
            "          through the pipeline and print the normalized result\n"
            "  login   authorize rein for an HTTP server that asks for OAuth (browser flow)\n\n"
            "'rein mcp COMMAND --help' describes a command. `rein serve` serves the same tools\n"
            "at /mcp (Streamable HTTP). Exit status: 0 ok, 1 a server is not ready or the call\n"
            "failed, 2 usage.\n");
}

static void serve_usage(FILE *out)
{
    fprintf(out, "usage: rein mcp serve [--skills DIR]... [--root DIR]... [--config FILE]\n\n"
                 "Offers rein's tools to one MCP client over stdin/stdout; logs go to stderr.\n\n"
                 "  --skills DIR   load external skills from DIR (repeatable)\n"
                 "  --root DIR     a folder file_search and log_transform may read "
                 "(repeatable)\n" MCP_COMMON_HELP
                 "\nExit status: 0 the client closed the connection, 1 the server failed, 2 usage\n"
                 "or a configuration that cannot work.\n");
}

static void list_usage(FILE *out)
{
    fprintf(out,
            "usage: rein mcp list [--config FILE] [--url URL [--name NAME]] [--json]\n"
            "                     [--timeout DURATION]\n\n"
            "Starts the configured MCP servers and shows each one's state and its tools under\n"
            "the names rein gives them.\n\n" MCP_COMMON_HELP
            "  --json         the servers as JSON\n"
            "  --timeout D    how long each server may take to start (milliseconds, or 30s)\n"
            "\nExit status: 0 every server is ready, 1 one is not, 2 usage.\n");
}

static void call_usage(FILE *out)
{
    fprintf(out,
            "usage: rein mcp call [--config FILE] [--url URL [--name NAME]] TOOL\n"
            "                     ['ARGS_JSON' | -] [--timeout DURATION]\n"
            "                     [--elicit ask|defaults|decline]\n\n"
            "Calls TOOL (server__tool, or with --url the server's own name for it) through the\n"
            "call pipeline and prints the normalized result as JSON. ARGS_JSON defaults to\n"
            "{}; - reads it from stdin.\n\n" MCP_COMMON_HELP
            "  --timeout D    stop the call after D (milliseconds, or 30s)\n"
            "  --elicit M     let the servers ask for input (elicitation/create) and answer\n"
            "                 every form: ask asks the person at stdin field by field (on\n"
            "                 stderr), defaults accepts it with the defaults it gives (and\n"
            "                 declines it when a required field has none), decline declines it\n"
            "                 (default: ask when stdin is a terminal, else no elicitation)\n"
            "\nExit status: 0 the call succeeded, 1 it failed, 2 usage.\n");
}

static void login_usage(FILE *out)
{
    fprintf(out, "usage: rein mcp login [--config FILE] [--url URL [--name NAME]] NAME\n"
                 "                      [--timeout DURATION]\n\n"
                 "Authorizes rein for the HTTP MCP server NAME (OAuth 2.1 with PKCE): forgets the\n"
                 "token stored for it, prints the address to open in a browser (and opens it with\n"
                 "REIN_MCP_OAUTH_OPEN, else xdg-open when there is a display), waits for the\n"
                 "answer on a 127.0.0.1 port and stores the token, mode 0600, in\n"
                 "$REIN_STATE_DIR/mcp-oauth.json (default ~/.local/state/rein).\n\n" MCP_COMMON_HELP
                 "  --timeout D    how long to wait for the authorization (default 10 minutes)\n"
                 "\nExit status: 0 authorized (or no authorization needed), 1 failed, 2 usage.\n");
}

static int mcp_option(void *opts, const char *flag, const char *v)
{
    struct mcp_opts *o = opts;

    if (strcmp(flag, "--url") == 0)
        o->url = v;
    else if (strcmp(flag, "--name") == 0)
        o->name = v;
    else if (strcmp(flag, "--elicit") == 0) {
        if (strcmp(v, "ask") != 0 && strcmp(v, "defaults") != 0 && strcmp(v, "decline") != 0) {
            fprintf(stderr, "rein mcp: --elicit takes ask, defaults or decline, not \"%s\"\n", v);
            return CLI_EXIT_USAGE;
        }
        o->elicit = v;
    } else if (!cli_parse_duration(v, 1, INT32_MAX, &o->timeout_ms))
        return cli_duration_error("mcp", flag, v);
    return CLI_EXIT_OK;
}

static int parse_opts(const char *name, void (*usage)(FILE *), unsigned max_pos, int argc,
                      char **argv, struct mcp_opts *o)
{
    static const char *const valued_serve[] = {NULL};
    static const char *const valued[] = {"--url", "--name", "--timeout", "--elicit", NULL};
    struct cli_args args = {
        .name = name,
        .usage = usage,
        .shared = strcmp(name, "mcp serve") == 0 ? CLI_OPT_TOOLS : CLI_OPT_TOOLS | CLI_OPT_JSON,
        .valued = strcmp(name, "mcp serve") == 0 ? valued_serve : valued,
        .option = mcp_option,
        .positional = "argument",
        .min_pos = max_pos ? 1 : 0,
        .max_pos = max_pos,
        .stdin_pos = 2u,
        .json_pos = 2u,
    };

    return cli_args_parse(&args, argc, argv, o, &o->setup, o->args, &o->nargs);
}

/* The registry: built-in skills, then REIN_SKILLS_PATH, then the --skills folders. */
static rein_registry *load_registry(const struct mcp_opts *o, rein_error *err)
{
    return cli_registry_new(&o->setup, err);
}

/* The MCP servers of the configuration (and --url); NULL with err set on a bad config. The
 * configuration is rein's (checked when the command started), unless REIN_MCP_CONFIG names
 * a file of servers and no --config was given. */
static rein_mcp_clients *load_clients(const struct mcp_opts *o, rein_error *err)
{
    const char *mcp_only = getenv("REIN_MCP_CONFIG");
    const char *path = cli_config_path();
    rein_mcp_clients *set = rein_mcp_clients_new();
    bool flag = o && o->setup.config && !o->setup.config_origin;

    if (!set) {
        rein_error_set(err, REIN_ENOMEM, "out of memory");
        return NULL;
    }
    if (!flag && mcp_only && *mcp_only) {
        if (rein_mcp_clients_load_file(set, mcp_only, err) != REIN_OK)
            goto fail;
    } else if (cli_config_doc()) {
        /* Relative "cwd"s are relative to the file's folder. */
        char *dir = rein_strdup(path);
        char *slash = dir ? strrchr(dir, '/') : NULL;
        rein_err rc;
        if (slash)
            *slash = '\0';
        rc = rein_mcp_clients_add_config(set, cli_config_doc(), slash ? dir : ".", err);
        rein_free(dir);
        if (rc)
            goto fail;
    }
    if (o && o->url) {
        json_t *entry = json_pack("{s:s}", "url", o->url);
        rein_err rc = entry ? rein_mcp_clients_add(set, o->name ? o->name : "remote", entry, err)
                            : rein_error_set(err, REIN_ENOMEM, "out of memory");
        json_decref(entry);
        if (rc)
            goto fail;
    }
    {
        const char *opener = getenv("REIN_MCP_OAUTH_OPEN");
        rein_mcp_clients_allow_login(set, isatty(STDIN_FILENO) || (opener && opener[0]));
    }
    return set;
fail:
    rein_mcp_clients_free(set);
    return NULL;
}

/* Prompts and declared resources from the skill folders (REIN_SKILLS_PATH, then --skills). */
static rein_err load_context(rein_mcp_server *srv, const struct cli_setup *setup, rein_error *err)
{
    const char *path = getenv("REIN_SKILLS_PATH");
    rein_err rc = REIN_OK;

    for (const char *p = path; p && *p && !rc;) {
        const char *colon = strchr(p, ':');
        size_t n = colon ? (size_t)(colon - p) : strlen(p);
        char dir[4096];
        if (n > 0 && n < sizeof(dir)) {
            memcpy(dir, p, n);
            dir[n] = '\0';
            rc = rein_mcp_server_load_dir(srv, dir, err);
        }
        p = colon ? colon + 1 : NULL;
    }
    for (size_t i = 0; setup && !rc && i < setup->nskills; i++)
        rc = rein_mcp_server_load_dir(srv, setup->skills[i], err);
    return rc;
}

/* Starts the servers and adds their tools to reg. */
static rein_err join_clients(rein_mcp_clients *set, rein_registry *reg, int64_t timeout_ms,
                             rein_error *err)
{
    rein_mcp_clients_connect(set, timeout_ms);
    return rein_mcp_clients_register(set, reg, err);
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

/* The MCP server's files are the file skills' roots (--root, else the current folder). */
static const char *const cwd_root[] = {".", NULL};

static void server_opts(struct rein_mcp_server_opts *so, const struct cli_setup *setup,
                        rein_store *store)
{
    memset(so, 0, sizeof(*so));
    so->roots = setup && setup->nroots ? setup->roots : cwd_root;
    so->store = store;
    so->allowed_hosts = getenv("REIN_MCP_ALLOWED_HOSTS");
    so->sse_close_ms = env_ms("REIN_MCP_SSE_CLOSE_MS", 0);
    so->sse_retry_ms = env_ms("REIN_MCP_SSE_RETRY_MS", 0);
    so->progress_interval_ms = env_ms("REIN_MCP_PROGRESS_MS", 0);
    so->state_secret = getenv("REIN_MCP_STATE_SECRET");
}

static int cmd_mcp_serve(const struct mcp_opts *o)
{
    struct rein_mcp_server_opts so;
    rein_mcp_clients *clients;
    rein_registry *reg = NULL;
    rein_mcp_server *srv = NULL;
    rein_store *store = NULL;
    rein_error err = {0};
    int rc = CLI_EXIT_OK;

    rein_error_clear(&err);
    clients = load_clients(o, &err);
    reg = clients ? load_registry(o, &err) : NULL;
    if (!reg) {
        cli_print_error(&err);
        rein_mcp_clients_free(clients);
        return CLI_EXIT_USAGE;
    }
    /* Stored conversations become resources only when a store is named (REIN_STORE): a stdio
     * server should not make a database file where it is started. */
    const char *store_url = getenv("REIN_STORE");
    if (store_url && store_url[0] && cli_store_open(NULL, NULL, &store, &err) != REIN_OK) {
        cli_print_error(&err);
        rein_registry_free(reg);
        rein_mcp_clients_free(clients);
        return CLI_EXIT_USAGE;
    }
    server_opts(&so, &o->setup, store);
    /* A remote server's questions during a call go on to the client that made it. */
    rein_mcp_clients_offer(clients, REIN_MCP_OFFER_ALL);
    srv = rein_mcp_server_new(reg, &so, &err);
    /* The configured servers connect in the background: the client's initialize is answered at
     * once, and their tools join (with notifications/tools/list_changed) when they are ready. */
    if (!srv || load_context(srv, &o->setup, &err) != REIN_OK ||
        rein_mcp_clients_start(clients, reg, &err) != REIN_OK ||
        rein_mcp_server_run_stdio(srv, STDIN_FILENO, STDOUT_FILENO, &err) != REIN_OK) {
        cli_print_error(&err);
        rc = CLI_EXIT_FAIL;
    }
    /* The servers stop before the registry whose tools they fill. */
    rein_mcp_clients_free(clients);
    rein_mcp_server_free(srv);
    rein_registry_free(reg);
    rein_store_free(store);
    return rc;
}

static void print_status(const json_t *status)
{
    const json_t *s, *t;
    size_t i, j;

    json_array_foreach(status, i, s)
    {
        const json_t *info = json_object_get(s, "serverInfo");
        printf("%s  %s  %s %s", json_string_value(json_object_get(s, "name")),
               json_string_value(json_object_get(s, "state")),
               json_string_value(json_object_get(s, "transport")),
               json_string_value(json_object_get(s, "target")));
        if (json_object_get(s, "protocolVersion"))
            printf("  (protocol %s", json_string_value(json_object_get(s, "protocolVersion")));
        if (info && json_object_get(s, "protocolVersion"))
            printf(", %s %s", json_string_value(json_object_get(info, "name")) ?: "?",
                   json_string_value(json_object_get(info, "version")) ?: "");
        printf("%s\n", json_object_get(s, "protocolVersion") ? ")" : "");
        if (json_object_get(s, "error"))
            printf("  error: %s\n", json_string_value(json_object_get(s, "error")));
        json_array_foreach(json_object_get(s, "tools"), j, t)
        {
            printf("  %-40s %s\n", json_string_value(json_object_get(t, "id")),
                   json_string_value(json_object_get(t, "name")));
        }
        json_array_foreach(json_object_get(s, "problems"), j, t)
        {
            printf("  problem: %s\n", json_string_value(t));
        }
    }
}

static int cmd_mcp_list(const struct mcp_opts *o)
{
    rein_mcp_clients *clients;
    rein_registry *reg = NULL;
    json_t *status = NULL, *s;
    rein_error err = {0};
    size_t i;
    int rc = CLI_EXIT_OK;

    rein_error_clear(&err);
    clients = load_clients(o, &err);
    reg = clients ? load_registry(o, &err) : NULL;
    if (!reg || join_clients(clients, reg, o->timeout_ms, &err) != REIN_OK) {
        cli_print_error(&err);
        rc = CLI_EXIT_USAGE;
        goto out;
    }
    if (rein_mcp_clients_count(clients) == 0)
        fprintf(stderr, "rein: no MCP servers are configured (use --config FILE, "
                        "REIN_MCP_CONFIG, REIN_CONFIG or --url)\n");
    status = rein_mcp_clients_status_json(clients);
    if (!status) {
        fprintf(stderr, "rein: out of memory\n");
        rc = CLI_EXIT_FAIL;
        goto out;
    }
    if (o->setup.json) {
        cli_print_json(status);
    } else {
        print_status(status);
    }
    json_array_foreach(status, i, s)
    {
        if (strcmp(json_string_value(json_object_get(s, "state")), "ready") != 0)
            rc = CLI_EXIT_FAIL;
    }
out:
    json_decref(status);
    rein_registry_free(reg);
    rein_mcp_clients_free(clients);
    return rc;
}

/* One form at a time on the terminal, whichever thread a server's question came on. */
static pthread_mutex_t asking = PTHREAD_MUTEX_INITIALIZER;

/* `rein mcp call --elicit`: the servers' forms answered by the person at stdin (ask; the
 * questions on stderr) or without a person (userdata: the mode). What the server asked is shown
 * on stderr. */
static rein_err elicit_answer(void *userdata, const char *key, const char *method,
                              const json_t *params, int64_t timeout_ms, json_t **result,
                              rein_error *err)
{
    const char *mode = userdata, *why = NULL;
    const char *message = json_string_value(json_object_get(params, "message"));

    (void)key;
    (void)timeout_ms;
    if (strcmp(method, "elicitation/create") != 0)
        return rein_error_set(err, REIN_ENOTSUP, "rein mcp call answers no %s", method);
    if (strcmp(mode, "ask") == 0) {
        pthread_mutex_lock(&asking);
        *result = rein_mcp_elicit_ask(params, stdin, stderr);
        pthread_mutex_unlock(&asking);
        return *result ? REIN_OK : rein_error_set(err, REIN_ENOMEM, "out of memory");
    }
    *result = strcmp(mode, "defaults") == 0 ? rein_mcp_elicit_defaults(params, &why)
                                            : json_pack("{s:s}", "action", "decline");
    if (!*result)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    fprintf(stderr, "rein: the server asks: %s\nrein: %s (--elicit %s)%s%s\n",
            message ? message : "(no message)",
            json_string_value(json_object_get(*result, "action")), mode, why ? ": " : "",
            why ? why : "");
    return REIN_OK;
}

static int cmd_mcp_call(const struct mcp_opts *o)
{
    const char *tool = o->nargs > 0 ? o->args[0] : NULL;
    const char *args = o->nargs > 1 ? o->args[1] : "{}", *elicit = o->elicit;
    struct rein_call_opts copts = {.timeout_ms = o->timeout_ms};
    struct rein_call_input in = {0};
    rein_mcp_clients *clients;
    rein_registry *reg = NULL;
    rein_call_result *res = NULL;
    rein_error err = {0};
    int rc = CLI_EXIT_FAIL;

    if (!tool)
        return cli_usage_error("rein mcp call needs a tool name (see rein mcp --help)");
    rein_error_clear(&err);
    clients = load_clients(o, &err);
    /* A person at the terminal answers the servers' forms, unless told otherwise (the
     * arguments read from stdin leave nothing to answer with). */
    if (!elicit && isatty(STDIN_FILENO) && strcmp(args, "-") != 0)
        elicit = "ask";
    if (clients && elicit) {
        rein_mcp_clients_offer(clients, REIN_MCP_OFFER_ELICITATION);
        copts.ask = elicit_answer;
        copts.ask_data = (void *)elicit;
    }
    reg = clients ? rein_registry_new(&err) : NULL;
    if (!reg || join_clients(clients, reg, o->timeout_ms, &err) != REIN_OK) {
        cli_print_error(&err);
        rc = CLI_EXIT_USAGE;
        goto out;
    }
    if (o->url) {
        /* With --url the tool is named as that server names it. */
        const char *id = rein_mcp_clients_tool_id(clients, o->name ? o->name : "remote", tool);
        if (id)
            tool = id;
    }
    in.name = tool;
    in.args_text = args;
    in.args_len = strlen(args);
    if (rein_call_run(reg, &in, &copts, &res, &err) != REIN_OK) {
        cli_print_error(&err);
        goto out;
    }
    cli_print_json(rein_call_result_json(res));
    rc = rein_call_result_ok(res) ? CLI_EXIT_OK : CLI_EXIT_FAIL;
out:
    rein_call_result_free(res);
    rein_registry_free(reg);
    rein_mcp_clients_free(clients);
    return rc;
}

static int cmd_mcp_login(const struct mcp_opts *o)
{
    const char *name = o->nargs > 0 ? o->args[0] : NULL;
    rein_mcp_clients *clients;
    rein_error err;
    bool authorized = false;
    int rc = CLI_EXIT_FAIL;

    if (!name)
        return cli_usage_error("rein mcp login needs a server name (see rein mcp login --help)");
    rein_error_clear(&err);
    clients = load_clients(o, &err);
    if (!clients) {
        cli_print_error(&err);
        return CLI_EXIT_USAGE;
    }
    if (rein_mcp_clients_login(clients, name, o->timeout_ms, &authorized, &err) != REIN_OK) {
        cli_print_error(&err);
        rc = err.code == REIN_ENOTFOUND || err.code == REIN_EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
    } else {
        fprintf(stderr,
                authorized ? "rein: %s: authorized; the token is stored for later commands\n"
                           : "rein: %s: connected; it asked for no authorization\n",
                name);
        rc = CLI_EXIT_OK;
    }
    rein_mcp_clients_free(clients);
    return rc;
}

static int run_sub(const char *name, void (*usage)(FILE *), unsigned max_pos, int argc, char **argv,
                   int (*fn)(const struct mcp_opts *))
{
    struct mcp_opts o;
    int rc;

    memset(&o, 0, sizeof(o));
    rc = parse_opts(name, usage, max_pos, argc, argv, &o);
    if (rc)
        return rc == CLI_ARGS_HELP ? CLI_EXIT_OK : rc;
    return fn(&o);
}

static int sub_serve(int argc, char **argv)
{
    return run_sub("mcp serve", serve_usage, 0, argc, argv, cmd_mcp_serve);
}

static int sub_list(int argc, char **argv)
{
    return run_sub("mcp list", list_usage, 0, argc, argv, cmd_mcp_list);
}

static int sub_call(int argc, char **argv)
{
    return run_sub("mcp call", call_usage, 2, argc, argv, cmd_mcp_call);
}

static int sub_login(int argc, char **argv)
{
    return run_sub("mcp login", login_usage, 1, argc, argv, cmd_mcp_login);
}

int cmd_mcp(int argc, char **argv)
{
    static const struct cli_command subs[] = {
        {"serve", "offer rein's tools over MCP on stdin/stdout", sub_serve},
        {"list", "the configured MCP servers and their tools", sub_list},
        {"call", "call a tool of a configured MCP server", sub_call},
        {"login", "authorize rein for an HTTP MCP server (OAuth)", sub_login},
        {NULL, NULL, NULL},
    };

    return cli_dispatch("mcp", subs, mcp_usage, argc, argv);
}

/* ---- the commands that run tools once ----------------------------------------------------- */

rein_mcp_clients *cli_mcp_join(rein_registry *reg, const struct cli_setup *setup, rein_error *err)
{
    struct mcp_opts o = {0};
    rein_mcp_clients *set;
    json_t *status, *s;
    size_t i;

    if (setup)
        o.setup = *setup; /* which configuration: as for rein mcp (load_clients) */
    set = load_clients(&o, err);
    if (!set || rein_mcp_clients_count(set) == 0)
        return set;
    /* Each server gets its own connect_timeout_ms; they start at once. */
    if (rein_mcp_clients_connect(set, 0) < rein_mcp_clients_count(set)) {
        status = rein_mcp_clients_status_json(set);
        json_array_foreach(status, i, s)
        {
            if (json_object_get(s, "error")) /* the message names the server */
                fprintf(stderr, "rein: %s; the tools of MCP server %s are not available\n",
                        json_string_value(json_object_get(s, "error")),
                        json_string_value(json_object_get(s, "name")));
        }
        json_decref(status);
    }
    if (rein_mcp_clients_register(set, reg, err) != REIN_OK) {
        rein_mcp_clients_free(set);
        return NULL;
    }
    return set;
}

/* ---- `rein serve` ------------------------------------------------------------------------ */

struct cli_mcp {
    rein_mcp_clients *clients;
    rein_mcp_server *srv;
};

/* GET /healthz: {"mcp": [{name, state, error?, retry_in_ms?, tools: N}]}, one per server. */
static void mcp_health(void *ud, json_t *health)
{
    struct cli_mcp *m = ud;
    json_t *all = rein_mcp_clients_status_json(m->clients), *out = json_array(), *s;
    size_t i;

    json_array_foreach(all, i, s)
    {
        json_t *o = json_pack("{s:O, s:O, s:I}", "name", json_object_get(s, "name"), "state",
                              json_object_get(s, "state"), "tools",
                              (json_int_t)json_array_size(json_object_get(s, "tools")));
        if (o && json_object_get(s, "error"))
            json_object_set(o, "error", json_object_get(s, "error"));
        if (o && json_object_get(s, "retry_in_ms"))
            json_object_set(o, "retry_in_ms", json_object_get(s, "retry_in_ms"));
        json_array_append_new(out, o);
    }
    if (out && json_array_size(out))
        json_object_set(health, "mcp", out);
    json_decref(out);
    json_decref(all);
}

struct cli_mcp *cli_mcp_attach(rein_server *http, rein_registry *reg, rein_store *store,
                               const struct cli_setup *setup, rein_error *err)
{
    struct cli_mcp *m = calloc(1, sizeof(*m));
    struct rein_mcp_server_opts so;

    if (!m) {
        rein_error_set(err, REIN_ENOMEM, "out of memory");
        return NULL;
    }
    server_opts(&so, setup, store);
    m->clients = load_clients(NULL, err);
    if (!m->clients)
        goto fail;
    /* A remote server's questions during a call go on to the client that made it. */
    rein_mcp_clients_offer(m->clients, REIN_MCP_OFFER_ALL);
    m->srv = rein_mcp_server_new(reg, &so, err);
    if (!m->srv || load_context(m->srv, setup, err) != REIN_OK ||
        rein_mcp_server_add_routes(m->srv, http, err) != REIN_OK)
        goto fail;
    /* The configured servers connect in the background: rein listens (and /healthz answers,
     * with each server's state) at once; a server's tools join when it is ready. */
    if (rein_mcp_clients_start(m->clients, reg, err) != REIN_OK)
        goto fail;
    rein_server_set_health(http, mcp_health, m);
    return m;
fail:
    cli_mcp_detach(m);
    return NULL;
}

void cli_mcp_detach(struct cli_mcp *m)
{
    if (!m)
        return;
    /* The servers stop first: their supervisors add tools to the registry the MCP server
     * watches. */
    rein_mcp_clients_free(m->clients);
    rein_mcp_server_free(m->srv);
    free(m);
}
