/*
 * The `rein` command: dispatches to one subcommand per file (src/cli/cmd_*.c).
 *
 * The command holds no agent logic; every subcommand is a thin layer over the public
 * library API, which is what keeps the library usable on its own.
 */
#include "cli.h"

#include <stdarg.h>
#include <string.h>

/* How long the exit waits for spans still queued to reach the collector. */
#define TRACE_FLUSH_MS 3000

/* One line per subcommand; the list ends with an empty entry. */
static const struct cli_command commands[] = {
    {"serve", "serve the HTTP API (conversations, metrics, health)", cmd_serve},
    {"verify", "run verification protocols and check an agent's claims", cmd_verify},
    {"schema", "validate a JSON document against a JSON Schema", cmd_schema},
    {"skills", "list, show and invoke tools through the call pipeline", cmd_skills},
    {"provider", "decode recorded model replies, talk to a model provider", cmd_provider},
    {"chat", "run one agent turn: the model calls tools until it answers", cmd_chat_agent},
    {"mcp", "serve tools over MCP (stdio), list and call configured MCP servers", cmd_mcp},
    {"loop", "let the agent work on a goal until the verification protocols hold", cmd_loop},
    {"plan", "plan a request as steps, run and verify them, replan what fails", cmd_plan},
    {NULL, NULL, NULL},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: rein [--version] [--help] <command> [<args>]\n"
                 "       rein help <command> [<subcommand>]\n\n"
                 "rein makes LLM tool calling trustworthy: every call a model makes is repaired,\n"
                 "validated, executed and recorded through one pipeline.\n\n"
                 "commands:\n");
    for (size_t i = 0; commands[i].name; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n'rein <command> --help' (or 'rein help <command>') describes a command.\n"
                 "Every command takes --config FILE, rein's configuration file (default\n"
                 "REIN_CONFIG). Logging: REIN_LOG=error|warn|info|debug. Colour and terminal\n"
                 "escapes only on a terminal, never with NO_COLOR or TERM=dumb.\n\n"
                 "Exit status: 0 success, 1 the thing checked or run failed, 2 usage or a\n"
                 "configuration that cannot work (some commands add 3: see their help).\n");
}

static const struct cli_command *find_command(const char *name)
{
    for (size_t i = 0; commands[i].name; i++) {
        if (strcmp(name, commands[i].name) == 0)
            return &commands[i];
    }
    return NULL;
}

static int unknown_command(const char *name)
{
    const char *names[sizeof(commands) / sizeof(commands[0])];
    const char *near;
    size_t n = 0;

    for (size_t i = 0; commands[i].name; i++)
        names[n++] = commands[i].name;
    near = rein_suggest(name, names, n);
    if (near)
        return cli_usage_error("'%s' is not a rein command (did you mean '%s'?)", name, near);
    fprintf(stderr, "rein: '%s' is not a rein command\n\n", name);
    usage(stderr);
    return CLI_EXIT_USAGE;
}

/* `rein help [CMD [SUB]]`: the same text as `rein CMD [SUB] --help`. */
static int help(int argc, char **argv)
{
    const struct cli_command *c;
    char help_flag[] = "--help";
    char *args[3];

    if (argc < 3) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    c = find_command(argv[2]);
    if (!c)
        return unknown_command(argv[2]);
    if (argc > 4)
        return cli_usage_error("help: give a command and at most one subcommand");
    args[0] = argv[2];
    args[1] = argc == 4 ? argv[3] : help_flag;
    args[2] = help_flag;
    return c->run(argc == 4 ? 3 : 2, args);
}

int cli_usage_error(const char *fmt, ...)
{
    va_list ap;

    fputs("rein: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return CLI_EXIT_USAGE;
}

void cli_print_error(const rein_error *err)
{
    fprintf(stderr, "rein: %s%s%s\n", err->where, err->where[0] ? ": " : "",
            err->msg[0] ? err->msg : rein_strerror(err->code));
}

int cli_is_flag(const char *text, const char *short_form, const char *long_form)
{
    return text && ((short_form && strcmp(text, short_form) == 0) ||
                    (long_form && strcmp(text, long_form) == 0));
}

static int run(int argc, char **argv)
{
    const struct cli_command *c;

    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    if (cli_is_flag(argv[1], "-h", "--help")) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(argv[1], "help") == 0)
        return help(argc, argv);
    if (cli_is_flag(argv[1], "-V", "--version") || strcmp(argv[1], "version") == 0) {
        printf("rein %s\n", rein_version());
        return CLI_EXIT_OK;
    }
    c = find_command(argv[1]);
    if (c)
        return c->run(argc - 1, argv + 1);
    if (argv[1][0] == '-')
        return cli_usage_error("unknown option '%s' before the command (see rein --help)", argv[1]);
    return unknown_command(argv[1]);
}

int main(int argc, char **argv)
{
    rein_error err;
    int status;

    /* Span export when the OpenTelemetry variables configure it; a setting rein cannot use is
     * reported and the command runs untraced rather than not at all. */
    if (rein_trace_setup(&err) != REIN_OK)
        fprintf(stderr, "rein: tracing is off: %s\n", err.msg);
    /* The same for metrics: the process-wide registry, which the agents record into
     * (cli_parts_new), sent over OTLP as well as shown at rein serve's /metrics. */
    if (rein_trace_metrics_setup(rein_metrics_otel_collect, NULL, &err) != REIN_OK)
        fprintf(stderr, "rein: metrics export is off: %s\n", err.msg);
    status = run(argc, argv);
    rein_trace_shutdown(TRACE_FLUSH_MS);
    cli_config_release();
    cli_args_release();
    return status;
}
