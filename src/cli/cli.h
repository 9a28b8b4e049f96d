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
#include <pthread.h>
#include <signal.h>
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

/* ---- cli_setup.c: what the commands that run tools parse alike ---- */

#define CLI_MAX_DIRS  32
#define CLI_MAX_FLAGS 16
#define CLI_ARGS_HELP (-1) /* cli_args_parse: --help printed the usage on stdout */

/* The model and the tools, as chat, loop, plan, serve (and skills, mcp: the tools) take them. */
struct cli_setup {
    const char *config;                  /* provider settings file (borrowed); REIN_CONFIG */
    const char *flags[CLI_MAX_FLAGS][2]; /* {key, value}: --provider, --model, --base-url */
    size_t nflags;
    const char *skills[CLI_MAX_DIRS]; /* --skills folders */
    size_t nskills;
    const char *roots[CLI_MAX_DIRS + 1]; /* --root folders, NULL-terminated */
    size_t nroots;
    bool rules_first; /* put the rules provider before the model */
    /* --json (the result object), --events (events as JSON lines), --yes (allow destructive
     * tools): taken by cli_args_parse for the commands that list them in switches */
    bool json, events, yes;
};

/* Sets config from REIN_CONFIG; everything else empty. */
void cli_setup_init(struct cli_setup *s);
/* Takes --provider, --model, --base-url, --skills and --root (value borrowed from argv).
 * Returns CLI_EXIT_OK when taken, CLI_EXIT_USAGE (message printed) when there are too many,
 * -1 when flag is none of them. */
int cli_setup_option(struct cli_setup *s, const char *flag, const char *value);

/* One command's arguments: the options of cli_setup_option, then its own. */
struct cli_args {
    const char *name;            /* "chat": messages say "chat: ..." and "see rein chat --help" */
    void (*usage)(FILE *out);    /* the help text */
    const char *const *valued;   /* its own options that take a value, NULL-terminated */
    const char *const *switches; /* its own options without a value, NULL-terminated */
    /* Takes one of valued (or, with value NULL, of switches); CLI_EXIT_OK or a usage status. */
    int (*option)(void *opts, const char *flag, const char *value);
    const char *positional; /* "message": one positional argument; NULL: none */
    bool required;          /* without it (or empty), the usage goes to stderr: exit 2 */
};
/* Starts s (cli_setup_init) and parses argv[1..]; the positional argument (borrowed) goes to
 * *positional. Returns CLI_EXIT_OK, CLI_ARGS_HELP, or CLI_EXIT_USAGE with the message or the
 * usage printed. */
int cli_args_parse(const struct cli_args *a, int argc, char **argv, void *opts, struct cli_setup *s,
                   const char **positional);
/* A whole decimal number in [lo, hi] (no sign games, no trailing text). */
bool cli_parse_number(const char *text, long long lo, long long hi, long long *out);
/* Takes the value of --timeout at argv[*i + 1] (advancing *i) into *ms. CLI_EXIT_OK, or
 * CLI_EXIT_USAGE with the message printed. */
int cli_timeout_arg(int argc, char **argv, int *i, int64_t *ms);

/* SIGINT and SIGTERM cancel a run while it lasts: a thread takes them with sigwait(), since a
 * signal handler may not take the cancel handle's lock. start blocks the signals in the
 * calling thread (threads started after inherit it); stop restores the mask. cancel is
 * borrowed and must outlive the watch. */
struct cli_sigwatch {
    sigset_t set, old;
    rein_cancel *cancel;
    pthread_t tid;
    bool waiting;
};
void cli_sigwatch_start(struct cli_sigwatch *w, rein_cancel *cancel);
void cli_sigwatch_stop(struct cli_sigwatch *w);

/* Approves every destructive call (--yes). */
rein_err cli_approve_yes(void *ud, const struct rein_agent_approval *req, bool *approved,
                         rein_error *err);
/* Prints j (borrowed) indented, with a newline, on stdout; nothing for NULL. */
void cli_print_json(const json_t *j);

/* ---- cli_agent.c: what they build from it ---- */

/* True when a provider or model is configured anywhere: flags, environment, config file. */
bool cli_provider_configured(const struct cli_setup *s);
/* The provider from the config file, the environment and the flags, with model (may be NULL)
 * over them; the rules provider when none of them names a provider or model. New. */
rein_provider *cli_provider_new(const struct cli_setup *s, const char *model, rein_error *err);
rein_provider *cli_rules_new(rein_error *err);
/* Built-in skills (file_search and log_transform limited to the roots, else the current
 * folder), then REIN_SKILLS_PATH, then the skills folders. New. */
rein_registry *cli_registry_new(const struct cli_setup *s, rein_error *err);
/* Manifests the registry refused, one line each on stderr, so a list is never silently short. */
void cli_registry_report(const rein_registry *reg);

/* What a command that runs the model builds: the provider, the registry, the agent (when
 * asked for) with the rules provider in front (rules_first). Release frees what was made;
 * on a failure the parts made so far stay, so the caller can tell which step failed. */
struct cli_parts {
    rein_provider *provider, *rules;
    rein_registry *reg;
    rein_agent *agent;
};
rein_err cli_parts_new(const struct cli_setup *s, bool agent, struct cli_parts *p, rein_error *err);
void cli_parts_release(struct cli_parts *p);
/* Opens url, else REIN_STORE, else REIN_STORE_DEFAULT_URL, with opts (may be NULL). */
rein_err cli_store_open(const char *url, const struct rein_store_opts *opts, rein_store **out,
                        rein_error *err);
/* The value of --conversation into *out when it is a valid conversation id; else a usage
 * error (CLI_EXIT_USAGE). */
int cli_conversation_option(const char *value, const char **out);

/* Prints "rein: " + message to stderr; returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *fmt, ...) REIN_PRINTF(1, 2);
/* Prints "rein: <where>: <msg>" for err to stderr. */
void cli_print_error(const rein_error *err);
/* True when text equals one of the two spellings ("-h", "--help"). */
int cli_is_flag(const char *text, const char *short_form, const char *long_form);

#endif /* REIN_CLI_H */
