/*
 * The `rein` command's private header: the subcommand table and helpers shared by the
 * subcommand files. The command uses only the public <rein/...> API.
 *
 * Exit codes follow one rule across subcommands: 0 success, 1 the checked thing failed
 * (invalid instance, tool error, failed verdict), 2 usage or unusable input.
 */
#ifndef REIN_CLI_H
#define REIN_CLI_H

#include <rein/rein.h>
#include <stdio.h>

#define CLI_EXIT_OK    0
#define CLI_EXIT_FAIL  1
#define CLI_EXIT_USAGE 2

struct cli_command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv); /* argv[0] is the subcommand name */
};

/* The subcommands, one per file (cmd_<name>.c), listed in main.c. */
int cmd_serve(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_schema(int argc, char **argv);
int cmd_skills(int argc, char **argv);
int cmd_provider(int argc, char **argv);
int cmd_chat_agent(int argc, char **argv); /* cmd_chat.c (cmd_provider.c has a static cmd_chat) */
int cmd_mcp(int argc, char **argv);
int cmd_loop(int argc, char **argv);
int cmd_plan(int argc, char **argv);
/* `rein serve`'s /mcp routes (cmd_mcp.c): attach after the other routes, detach after the
 * server stopped. The configured MCP servers' tools join reg (borrowed; must outlive the
 * attachment), the registry the agent and the skill routes use too. */
struct cli_mcp *cli_mcp_attach(rein_server *http, rein_registry *reg, rein_error *err);
void cli_mcp_detach(struct cli_mcp *m);

/* cli_agent.c, shared by chat and serve. The provider from the config file (may be NULL),
 * the environment and flags ({key, value} pairs); the rules provider when none of them names
 * a provider or model. */
rein_provider *cli_provider_new(const char *config, const char *const (*flags)[2], size_t nflags,
                                rein_error *err);
rein_provider *cli_rules_new(rein_error *err);
/* Built-in skills (file_search and log_transform limited to roots: NULL-terminated, may be NULL
 * or empty for the current folder), then REIN_SKILLS_PATH, then the skills folders. */
rein_registry *cli_registry_new(const char *const *skills, size_t nskills, const char *const *roots,
                                rein_error *err);

/* Prints "rein: " + message to stderr; returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *fmt, ...) REIN_PRINTF(1, 2);
/* Prints "rein: <where>: <msg>" for err to stderr. */
void cli_print_error(const rein_error *err);
/* True when text equals one of the two spellings ("-h", "--help"). */
int cli_is_flag(const char *text, const char *short_form, const char *long_form);

#endif /* REIN_CLI_H */
