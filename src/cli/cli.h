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
struct cli_setup;
struct cli_mcp *cli_mcp_attach(rein_server *http, rein_registry *reg, rein_store *store,
                               const struct cli_setup *setup, rein_error *err);
void cli_mcp_detach(struct cli_mcp *m);
/*
 * The MCP servers of the configuration (rein's, or REIN_MCP_CONFIG's without --config), for the
 * commands that run tools once (chat, loop, plan, skills): connected now, their tools added
 * to reg (borrowed; free the result before it). A server that cannot be reached is named on
 * stderr and its tools are missing; a configuration that cannot be read is an error (NULL,
 * err set). New; free with rein_mcp_clients_free().
 */
rein_mcp_clients *cli_mcp_join(rein_registry *reg, const struct cli_setup *setup, rein_error *err);

/* ---- cli_setup.c: what the commands that run tools parse alike ---- */

#define CLI_MAX_DIRS  32
#define CLI_MAX_FLAGS 16
#define CLI_ARGS_HELP (-1) /* cli_args_parse: --help printed the usage on stdout */

/* The model and the tools, as chat, loop, plan, serve (and skills, mcp: the tools) take them. */
struct cli_setup {
    const char *config;        /* rein's configuration file (borrowed): --config, REIN_CONFIG */
    const char *config_origin; /* "REIN_CONFIG" when the environment named it, else NULL */
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

/* ---- cli_args.c: the command line ---- */

/* Groups of shared options a command takes (struct cli_args.shared); --config FILE and
 * -h/--help are taken by every command. */
#define CLI_OPT_MODEL  (1u << 0) /* --provider, --model, --base-url */
#define CLI_OPT_TOOLS  (1u << 1) /* --skills DIR, --root DIR */
#define CLI_OPT_JSON   (1u << 2) /* --json */
#define CLI_OPT_EVENTS (1u << 3) /* --events */
#define CLI_OPT_YES    (1u << 4) /* --yes */

/* Another spelling of an option. An old spelling keeps working: with now set, old is read as
 * now after a warning on stderr; with now NULL the command's option() gets old itself (its
 * meaning differs, e.g. units). A short form (-f for --format) is read as now silently. */
struct cli_alias {
    const char *old, *now;
    bool short_form;
};

/* One command's arguments. */
struct cli_args {
    const char *name;            /* "chat": messages say "chat: ..." and "see rein chat --help" */
    void (*usage)(FILE *out);    /* the help text: usage, options, exit status */
    unsigned shared;             /* CLI_OPT_* */
    const char *const *valued;   /* its own options that take a value, NULL-terminated */
    const char *const *switches; /* its own options without a value, NULL-terminated */
    const struct cli_alias *aliases; /* deprecated spellings; ends with {NULL, NULL} */
    /* Takes one of valued (or, with value NULL, of switches); CLI_EXIT_OK or a usage status.
     * flag lives only during the call (value is argv's, or stdin's text, and stays). */
    int (*option)(void *opts, const char *flag, const char *value);
    const char *positional;    /* "message": what the positional arguments are, for messages */
    unsigned min_pos, max_pos; /* how many positional arguments; fewer prints the usage */
    unsigned stdin_pos;        /* bit k: positional k may be "-", read from stdin */
    unsigned json_pos;         /* bit k: positional k is JSON (stdin text kept as it is) */
    unsigned path_pos;         /* bit k: positional k is a path (bytes: not checked as UTF-8) */
};
/*
 * Starts s (cli_setup_init), parses argv[1..] (options anywhere, --opt=value, -- ends them),
 * puts the positional arguments (borrowed from argv, or read from stdin for "-") in pos
 * (room for max_pos) and their number in *npos (may be NULL), checks that they are UTF-8,
 * and loads rein's configuration (cli_config_load). Returns CLI_EXIT_OK, CLI_ARGS_HELP (the
 * usage went to stdout), or CLI_EXIT_USAGE with the message printed.
 */
int cli_args_parse(const struct cli_args *a, int argc, char **argv, void *opts, struct cli_setup *s,
                   const char **pos, unsigned *npos);
/* Reads stdin whole (at most 16 MiB) into *text (new, NUL-terminated; rein_free) and *len.
 * CLI_EXIT_OK, or CLI_EXIT_USAGE with the message printed. */
int cli_read_stdin(char **text, size_t *len);
/* Frees what the parser read from stdin (at exit). */
void cli_args_release(void);
/* Runs the subcommand argv[1] of cmd from subs (ends with an empty entry): no subcommand
 * prints usage on stderr (2), -h/--help on stdout (0), an unknown one is refused with the
 * nearest name suggested (2). */
int cli_dispatch(const char *cmd, const struct cli_command *subs, void (*usage)(FILE *out),
                 int argc, char **argv);
/* "rein: warning: rein CMD: OLD is deprecated; use NOW" on stderr. */
void cli_deprecated(const char *cmd, const char *old, const char *now);
/* CLI_EXIT_OK when len bytes of text are UTF-8; else "CMD: WHAT: not valid UTF-8 at byte N"
 * and CLI_EXIT_USAGE. */
int cli_text_check(const char *cmd, const char *what, const char *text, size_t len);
/* A whole decimal number in [lo, hi] (no sign games, no trailing text). */
bool cli_parse_number(const char *text, long long lo, long long hi, long long *out);
/* A duration in [lo, hi] milliseconds: a number of milliseconds, or a number with a unit
 * (ms, s, m, h; "1.5s"). */
bool cli_parse_duration(const char *text, int64_t lo, int64_t hi, int64_t *ms);
/* The message for a bad duration; returns CLI_EXIT_USAGE. */
int cli_duration_error(const char *cmd, const char *flag, const char *value);

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
/* Prints j (borrowed) compact on one line and flushes (events, JSON lines). */
void cli_print_json_line(const json_t *j);

/* ---- cli_config.c: rein's configuration file ---- */

/* Reads and checks the configuration file at path (borrowed; NULL or "": none) once per run;
 * origin says who named it for messages ("REIN_CONFIG"; NULL: --config). A file that cannot
 * be used is refused with one line naming file, line and column: CLI_EXIT_USAGE. Later calls
 * keep the first file. */
int cli_config_load(const char *path, const char *origin);
/* The checked configuration document (borrowed until cli_config_release), or NULL. */
const json_t *cli_config_doc(void);
/* Its path, or NULL when there is none. */
const char *cli_config_path(void);
void cli_config_release(void);
/* True when path is a verification protocol file (YAML, or JSON with "protocols"): what
 * --config named in rein verify and rein loop before it meant rein's configuration. */
bool cli_is_protocol_file(const char *path);

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
/* Names the provider and model in a --json result's "meta" (created when missing). */
void cli_json_add_provider(json_t *result, const rein_provider *p);
/* With REIN_LOG=info, one line on stderr naming the provider and model cmd uses. */
void cli_log_provider(const char *cmd, const rein_provider *p);
/* Manifests the registry refused, one line each on stderr, so a list is never silently short. */
void cli_registry_report(const rein_registry *reg);

/* What a command that runs the model builds: the provider, the registry, the agent (when
 * asked for) with the rules provider in front (rules_first). Release frees what was made;
 * on a failure the parts made so far stay, so the caller can tell which step failed. */
struct cli_parts {
    rein_provider *provider, *rules;
    rein_registry *reg;
    rein_agent *agent;
    rein_mcp_clients *mcp; /* cli_mcp_join()'s, when the command joined them; freed first */
};
rein_err cli_parts_new(const struct cli_setup *s, bool agent, struct cli_parts *p, rein_error *err);
void cli_parts_release(struct cli_parts *p);
/* Opens url, else REIN_STORE, else REIN_STORE_DEFAULT_URL, with opts (may be NULL). */
rein_err cli_store_open(const char *url, const struct rein_store_opts *opts, rein_store **out,
                        rein_error *err);
/* The value of --conversation into *out when it is a valid conversation id; else a usage
 * error (CLI_EXIT_USAGE). */
int cli_conversation_option(const char *value, const char **out);

/* ---- cli_term.c: terminal manners ---- */

/* What a progress display may send to a descriptor. */
enum cli_term {
    CLI_TERM_NONE,  /* not a terminal: no status line (a heartbeat with REIN_LOG=info) */
    CLI_TERM_PLAIN, /* a terminal, but NO_COLOR or TERM=dumb: carriage returns, no escapes */
    CLI_TERM_FULL,  /* a terminal that takes escape codes */
};
enum cli_term cli_term_of(int fd);
/* One status line on stderr, redrawn in place (never drawn for CLI_TERM_NONE). */
struct cli_status {
    enum cli_term mode;
    int width; /* of the line shown */
    bool shown;
};
void cli_status_draw(struct cli_status *s, const char *text);
void cli_status_clear(struct cli_status *s);
/* Heartbeats when stderr is no terminal: one line every CLI_HEARTBEAT_MS with REIN_LOG=info.
 * True (and *last_ms moved to now) when the next one is due. */
#define CLI_HEARTBEAT_MS 10000
bool cli_heartbeat_due(int64_t *last_ms, int64_t now_ms);

/* Prints "rein: " + message to stderr; returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *fmt, ...) REIN_PRINTF(1, 2);
/* Prints "rein: <where>: <msg>" for err to stderr. Every rein_error in the command starts
 * zeroed (= {0}), so a record a library call left untouched prints as its code, never as
 * stack garbage. */
void cli_print_error(const rein_error *err);
/* True when text equals one of the two spellings ("-h", "--help"). */
int cli_is_flag(const char *text, const char *short_form, const char *long_form);

#endif /* REIN_CLI_H */
