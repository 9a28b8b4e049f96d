/*
 * `rein skills`: list, show and invoke the tools rein knows (the built-in skills, and the
 * external ones under REIN_SKILLS_PATH and --skills folders).
 *
 *   rein skills list [--json]
 *   rein skills show ID
 *   rein skills invoke NAME ['ARGS_JSON'] [--timeout MS]
 *   common options: --skills DIR (repeatable), --root DIR (repeatable: file skill roots)
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
    struct cli_setup setup; /* the tool folders */
    bool json;
    int64_t timeout_ms;
    const char *args[2]; /* positional arguments after the action */
    size_t nargs;
};

static void skills_usage(FILE *out)
{
    fprintf(out, "usage: rein skills list [--json] [--skills DIR] [--root DIR]\n"
                 "       rein skills show ID [--skills DIR]\n"
                 "       rein skills invoke NAME ['ARGS_JSON'] [--timeout MS] [--root DIR] "
                 "[--skills DIR]\n\n"
                 "  --skills DIR  load external skills from DIR (each subfolder with a "
                 "manifest.json);\n"
                 "                repeatable, after the folders in REIN_SKILLS_PATH\n"
                 "  --root DIR    a folder file_search and log_transform may read (repeatable;\n"
                 "                default: the current directory)\n"
                 "  --json        list as JSON: {\"skills\": [manifest…], \"problems\": […]}\n"
                 "  --timeout MS  stop the call after MS milliseconds (the skill's own limit "
                 "still applies)\n\n"
                 "invoke prints the normalized result, or the invalid payload when the call could\n"
                 "not run; exit status 0 ok, 1 the call failed, 2 usage.\n");
}

static int parse_opts(int argc, char **argv, struct skills_opts *o)
{
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_flag(a, NULL, "--json")) {
            o->json = true;
        } else if (cli_is_flag(a, NULL, "--skills") || cli_is_flag(a, NULL, "--root")) {
            if (i + 1 >= argc)
                return cli_usage_error("%s needs a folder", a);
            if (cli_setup_option(&o->setup, a, argv[++i]))
                return CLI_EXIT_USAGE;
        } else if (cli_is_flag(a, NULL, "--timeout")) {
            if (cli_timeout_arg(argc, argv, &i, &o->timeout_ms) != CLI_EXIT_OK)
                return CLI_EXIT_USAGE;
        } else if (a[0] == '-' && a[1] == '-') {
            return cli_usage_error("unknown option %s (see rein skills --help)", a);
        } else if (o->nargs < sizeof(o->args) / sizeof(o->args[0])) {
            o->args[o->nargs++] = a;
        } else {
            return cli_usage_error("unexpected argument '%s'", a);
        }
    }
    return CLI_EXIT_OK;
}

/* The registry: built-in skills, then REIN_SKILLS_PATH, then --skills folders. */
static rein_registry *load_registry(const struct skills_opts *o)
{
    rein_error err;
    rein_registry *reg;

    rein_error_clear(&err);
    reg = cli_registry_new(&o->setup, &err);
    if (!reg)
        cli_print_error(&err);
    return reg;
}

static int do_list(const rein_registry *reg, const struct skills_opts *o)
{
    if (o->json) {
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
    rein_error why;
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
    rein_error err;
    int status;

    if (!cancel)
        return CLI_EXIT_FAIL;
    cli_sigwatch_start(&w, cancel); /* Ctrl-C and SIGTERM cancel the call */
    rein_error_clear(&err);
    if (rein_call_run(reg, &in, &opts, &res, &err)) {
        cli_print_error(&err);
        status = CLI_EXIT_FAIL;
    } else {
        cli_print_json(rein_call_result_model_json(res));
        if (rein_call_result_log(res) && rein_log_enabled(REIN_LOG_INFO))
            fprintf(stderr, "%s", rein_call_result_log(res));
        status = rein_call_result_ok(res) ? CLI_EXIT_OK : CLI_EXIT_FAIL;
    }
    cli_sigwatch_stop(&w);
    rein_call_result_free(res);
    rein_cancel_unref(cancel);
    return status;
}

int cmd_skills(int argc, char **argv)
{
    struct skills_opts o = {0};
    rein_registry *reg;
    int status;

    if (argc < 2 || cli_is_flag(argv[1], "-h", "--help")) {
        skills_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_EXIT_USAGE : CLI_EXIT_OK;
    }
    status = parse_opts(argc, argv, &o);
    if (status)
        return status;
    if (strcmp(argv[1], "list") == 0 && o.nargs == 0) {
        /* list takes no positional arguments */
    } else if (strcmp(argv[1], "show") == 0 && o.nargs == 1) {
        /* show ID */
    } else if (strcmp(argv[1], "invoke") == 0 && (o.nargs == 1 || o.nargs == 2)) {
        /* invoke NAME [ARGS] */
    } else {
        skills_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    reg = load_registry(&o);
    if (!reg)
        return CLI_EXIT_USAGE;
    if (!o.json)
        cli_registry_report(reg); /* stderr: stdout stays the listing or one JSON document */
    if (argv[1][0] == 'l')
        status = do_list(reg, &o);
    else if (argv[1][0] == 's')
        status = do_show(reg, o.args[0]);
    else
        status = do_invoke(reg, &o);
    rein_registry_free(reg);
    return status;
}
