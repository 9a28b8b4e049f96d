/*
 * The `rein` command: dispatches to one subcommand per file (src/cli/cmd_*.c).
 *
 * The command holds no agent logic; every subcommand is a thin layer over the public
 * library API, which is what keeps the library usable on its own.
 */
#include "cli.h"

#include <stdarg.h>
#include <string.h>

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
    fprintf(out, "usage: rein [--version] [--help] <command> [<args>]\n\n"
                 "rein makes LLM tool calling trustworthy: every call a model makes is repaired,\n"
                 "validated, executed and recorded through one pipeline.\n\n"
                 "commands:\n");
    for (size_t i = 0; commands[i].name; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n'rein <command> --help' describes a command. Logging: REIN_LOG=error|warn|"
                 "info|debug.\n");
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

int main(int argc, char **argv)
{
    if (argc < 2 || cli_is_flag(argv[1], "-h", "--help") || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return argc < 2 ? CLI_EXIT_USAGE : CLI_EXIT_OK;
    }
    if (cli_is_flag(argv[1], "-V", "--version") || strcmp(argv[1], "version") == 0) {
        printf("rein %s\n", rein_version());
        return CLI_EXIT_OK;
    }
    for (size_t i = 0; commands[i].name; i++) {
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    }
    fprintf(stderr, "rein: '%s' is not a rein command\n\n", argv[1]);
    usage(stderr);
    return CLI_EXIT_USAGE;
}
