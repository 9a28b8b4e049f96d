/*
 * `rein skills`: list, show and invoke the tools rein knows (the built-in skills, and the
 * external ones under REIN_SKILLS_PATH and --skills folders).
 *
 *   rein skills list [--json]
 *   rein skills show NAME
 *   rein skills invoke NAME ['ARGS_JSON' | -] [--timeout DURATION]
 *   common options: --skills DIR (repeatable), --root DIR (repeatable: file skill roots),
 *   --config FILE; each subcommand has its own --help
 *
 * invoke runs NAME through the same pipeline as a model's call (name repair included) and
 * prints the normalized result, or the invalid payload when the call could not run. Exit
 * status: 0 ok, 1 the call failed or could not run, 2 usage errors. Ctrl-C cancels a running
 * call (a process skill's whole process group is stopped).
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

struct skills_opts {
    struct cli_setup setup; /* the tool folders, --json */
    int64_t timeout_ms;
    const char *args[2]; /* positional arguments after the action */
    unsigned nargs;
};

#define COMMON_HELP                                                                                \
    "  --skills DIR   load external skills from DIR (each subfolder with a manifest.json);\n"      \
    "                 repeatable, after the folders in REIN_SKILLS_PATH\n"                         \
    "  --root DIR     a folder file_search and log_transform may read (repeatable;\n"              \
    "                 default: the current directory)\n"                                           \
    "  --config FILE  rein's configuration file (default REIN_CONFIG)\n"

static void skills_usage(FILE *out)
{
    fprintf(out, "usage: rein skills list [--json] [--skills DIR] [--root DIR]\n"
                 "       rein skills show [--json] NAME\n"
                 "       rein skills invoke NAME ['ARGS_JSON' | -] [--timeout DURATION]\n\n"
                 "  list     the tools rein knows: built-in skills, REIN_SKILLS_PATH, --skills\n"
                 "  show     one tool's manifest (the name is repaired as a model's would be)\n"
                 "  invoke   run one call through the call pipeline\n\n" COMMON_HELP
                 "\n'rein skills COMMAND --help' describes a command.\n"
                 "Exit status: 0 ok, 1 the call failed or the tool is unknown, 2 usage.\n");
}

static void list_usage(FILE *out)
{
    fprintf(out,
            "usage: rein skills list [--json] [--skills DIR]... [--root DIR]...\n\n"
            "Lists the tools rein knows: the built-in skills, then REIN_SKILLS_PATH, then the\n"
            "--skills folders. A manifest that cannot be used is named on stderr.\n\n"
            "  --json         {\"skills\": [manifest...], \"problems\": [...]}\n" COMMON_HELP
            "\nExit status: 0 listed, 2 usage or a folder that cannot be read.\n");
}

static void show_usage(FILE *out)
{
    fprintf(out,
            "usage: rein skills show [--skills DIR]... NAME\n\n"
            "Prints the manifest of the tool NAME as JSON (--json is accepted: the output is\n"
            "JSON already). A misspelt name finds its tool as a model's call would.\n\n" COMMON_HELP
            "\nExit status: 0 shown, 1 no such tool, 2 usage.\n");
}

static void invoke_usage(FILE *out)
{
    fprintf(out,
            "usage: rein skills invoke NAME ['ARGS_JSON' | -] [--timeout DURATION]\n"
            "                          [--skills DIR]... [--root DIR]...\n\n"
            "Runs NAME through the same pipeline as a model's call (name repair, schema check,\n"
            "policy, timeout, ledger) and prints the result as JSON. ARGS_JSON is the\n"
            "arguments object (default {}); - reads it from stdin. Ctrl-C cancels the call.\n\n"
            "  --timeout D    stop the call after D (milliseconds, or 30s); the skill's own\n"
            "                 limit still applies\n" COMMON_HELP
            "\nExit status: 0 the call succeeded, 1 it failed or could not run, 2 usage.\n");
}

static int skills_option(void *opts, const char *flag, const char *value)
{
    struct skills_opts *o = opts;

    (void)flag; /* --timeout, the one option of its own */
    if (!cli_parse_duration(value, 1, INT32_MAX, &o->timeout_ms))
        return cli_duration_error("skills invoke", "--timeout", value);
    return CLI_EXIT_OK;
}

static int parse_opts(const char *name, void (*usage)(FILE *), unsigned min, unsigned max, int argc,
                      char **argv, struct skills_opts *o)
{
    static const char *const valued[] = {"--timeout", NULL};
    struct cli_args args = {
        .name = name,
        .usage = usage,
        .shared = CLI_OPT_TOOLS | CLI_OPT_JSON,
        .valued = max == 2 ? valued : NULL,
        .option = skills_option,
        .positional = max == 2 ? "argument" : "tool name",
        .min_pos = min,
        .max_pos = max,
        .stdin_pos = 2u,
        .json_pos = 2u,
    };

    return cli_args_parse(&args, argc, argv, o, &o->setup, o->args, &o->nargs);
}

/* The registry: built-in skills, then REIN_SKILLS_PATH, then --skills folders. */
static rein_registry *load_registry(const struct skills_opts *o)
{
    rein_error err = {0};
    rein_registry *reg;

    rein_error_clear(&err);
    reg = cli_registry_new(&o->setup, &err);
    if (!reg)
        cli_print_error(&err);
    return reg;
}

static int do_list(const rein_registry *reg, const struct skills_opts *o)
{
    if (o->setup.json) {
        json_t *out = json_pack("{s:o, s:O}", "skills", rein_registry_manifests_json(reg),
                                "problems", rein_registry_problems(reg));
        if (!out)
            return CLI_EXIT_FAIL;
        cli_print_json(out);
        json_decref(out);
        return CLI_EXIT_OK;
    }
    printf("%-16s %-8s %-12s %s\n", "ID", "RUNNER", "FLAGS", "DESCRIPTION");
    for (size_t i = 0; i < rein_registry_count(reg); i++) {
        const rein_tool *t = rein_registry_at(reg, i);
        if (!t)
            continue;
        const char *flags = rein_tool_is_destructive(t) ? "destructive"
                            : rein_tool_is_read_only(t) ? "read-only"
                                                        : "-";
        printf("%-16s %-8s %-12s %.70s\n", rein_tool_id(t), rein_tool_runner_kind(t), flags,
               rein_tool_description(t));
    }
    return CLI_EXIT_OK;
}

static int do_show(const rein_registry *reg, const char *id)
{
    enum rein_repair how;
    rein_error why = {0};
    const rein_tool *t;

    rein_error_clear(&why);
    t = rein_registry_resolve(reg, id, &how, &why);
    if (!t) {
        fprintf(stderr, "rein: %s\n", why.msg);
        return CLI_EXIT_FAIL;
    }
    if (how != REIN_REPAIR_EXACT)
        fprintf(stderr, "rein: showing %s (for \"%s\")\n", rein_tool_id(t), id);
    cli_print_json(rein_tool_manifest(t));
    return CLI_EXIT_OK;
}

static int do_invoke(const rein_registry *reg, const struct skills_opts *o)
{
    rein_cancel *cancel = rein_cancel_new();
    struct cli_sigwatch w;
    struct rein_call_input in = {
        .name = o->args[0],
        .args_text = o->nargs > 1 ? o->args[1] : "",
        .args_len = o->nargs > 1 ? strlen(o->args[1]) : 0,
    };
    struct rein_call_opts opts = {.cancel = cancel, .timeout_ms = o->timeout_ms};
    rein_call_result *res = NULL;
    rein_error err = {0};
    int status;

    if (!cancel)
        return CLI_EXIT_FAIL;
    cli_sigwatch_start(&w, cancel); /* Ctrl-C and SIGTERM cancel the call */
    rein_error_clear(&err);
    if (rein_call_run(reg, &in, &opts, &res, &err)) {
        cli_print_error(&err);
        status = CLI_EXIT_FAIL;
    } else {
        /* The normalized result, as POST /skills/{id}/invoke answers (with the invalid
         * payload in it when the call could not run). */
        cli_print_json(rein_call_result_json(res));
        if (rein_call_result_log(res) && rein_log_enabled(REIN_LOG_INFO))
            fprintf(stderr, "%s", rein_call_result_log(res));
        status = rein_call_result_ok(res) ? CLI_EXIT_OK : CLI_EXIT_FAIL;
    }
    cli_sigwatch_stop(&w);
    rein_call_result_free(res);
    rein_cancel_unref(cancel);
    return status;
}

/* Builds the registry, reports what it refused (stderr: stdout stays one listing or one
 * JSON document), and runs the action. */
static int with_registry(const struct skills_opts *o, char action)
{
    rein_registry *reg = load_registry(o);
    rein_mcp_clients *mcp;
    rein_error err;
    int status;

    if (!reg)
        return CLI_EXIT_USAGE;
    /* The configured MCP servers' tools are skills like any other here. */
    rein_error_clear(&err);
    mcp = cli_mcp_join(reg, &o->setup, &err);
    if (!mcp) {
        cli_print_error(&err);
        rein_registry_free(reg);
        return CLI_EXIT_USAGE;
    }
    if (!o->setup.json)
        cli_registry_report(reg);
    if (action == 'l')
        status = do_list(reg, o);
    else if (action == 's')
        status = do_show(reg, o->args[0]);
    else
        status = do_invoke(reg, o);
    rein_mcp_clients_free(mcp);
    rein_registry_free(reg);
    return status;
}

static int cmd_list(int argc, char **argv)
{
    struct skills_opts o = {0};
    int rc = parse_opts("skills list", list_usage, 0, 0, argc, argv, &o);

    return rc ? (rc == CLI_ARGS_HELP ? CLI_EXIT_OK : rc) : with_registry(&o, 'l');
}

static int cmd_show(int argc, char **argv)
{
    struct skills_opts o = {0};
    int rc = parse_opts("skills show", show_usage, 1, 1, argc, argv, &o);

    return rc ? (rc == CLI_ARGS_HELP ? CLI_EXIT_OK : rc) : with_registry(&o, 's');
}

static int cmd_invoke(int argc, char **argv)
{
    struct skills_opts o = {0};
    int rc = parse_opts("skills invoke", invoke_usage, 1, 2, argc, argv, &o);

    return rc ? (rc == CLI_ARGS_HELP ? CLI_EXIT_OK : rc) : with_registry(&o, 'i');
}

int cmd_skills(int argc, char **argv)
{
    static const struct cli_command subs[] = {
        {"list", "list the tools", cmd_list},
        {"show", "show a tool's manifest", cmd_show},
        {"invoke", "run one call through the pipeline", cmd_invoke},
        {NULL, NULL, NULL},
    };

    return cli_dispatch("skills", subs, skills_usage, argc, argv);
}
