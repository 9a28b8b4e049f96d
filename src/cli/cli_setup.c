/*
 * What the `rein` subcommands that run tools parse alike: the model options (--provider,
 * --model, --base-url) and the tool folders (--skills, --root) into one struct cli_setup, one
 * argument loop (help, options with and without a value, one positional argument) driven by
 * a command's table, numbers, the SIGINT/SIGTERM watch that cancels a run, the --yes
 * approver and JSON output. chat, loop, plan and serve each keep their own options, help
 * text and exit codes; only the shared part lives here.
 */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void cli_setup_init(struct cli_setup *s)
{
    memset(s, 0, sizeof(*s));
    s->config = getenv("REIN_CONFIG");
}

int cli_setup_option(struct cli_setup *s, const char *flag, const char *value)
{
    static const char *const keys[][2] = {
        {"--provider", "provider"}, {"--model", "model"}, {"--base-url", "base_url"}};

    if (strcmp(flag, "--skills") == 0 || strcmp(flag, "--root") == 0) {
        bool skills = flag[2] == 's';
        if ((skills ? s->nskills : s->nroots) >= CLI_MAX_DIRS)
            return cli_usage_error("too many %s folders", flag);
        if (skills)
            s->skills[s->nskills++] = value;
        else
            s->roots[s->nroots++] = value;
        return CLI_EXIT_OK;
    }
    for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
        if (strcmp(flag, keys[k][0]) == 0) {
            if (s->nflags >= CLI_MAX_FLAGS)
                return cli_usage_error("too many provider settings");
            s->flags[s->nflags][0] = keys[k][1];
            s->flags[s->nflags++][1] = value;
            return CLI_EXIT_OK;
        }
    }
    return -1;
}

static bool listed(const char *const *list, const char *a)
{
    for (size_t k = 0; list && list[k]; k++) {
        if (strcmp(a, list[k]) == 0)
            return true;
    }
    return false;
}

static bool setup_takes_value(const char *a)
{
    static const char *const names[] = {"--provider", "--model", "--base-url",
                                        "--skills",   "--root",  NULL};
    return listed(names, a);
}

/* --json, --events and --yes into s; false for any other switch. */
static bool setup_switch(struct cli_setup *s, const char *a)
{
    if (strcmp(a, "--json") == 0)
        s->json = true;
    else if (strcmp(a, "--events") == 0)
        s->events = true;
    else if (strcmp(a, "--yes") == 0)
        s->yes = true;
    else
        return false;
    return true;
}

/* One option with its value (argv[*i + 1]); advances *i past it. */
static int take_valued(const struct cli_args *ca, int argc, char **argv, int *i, void *opts,
                       struct cli_setup *s)
{
    const char *a = argv[*i];

    if (*i + 1 >= argc)
        return cli_usage_error("%s: %s needs a value (see rein %s --help)", ca->name, a, ca->name);
    *i += 1;
    if (setup_takes_value(a))
        return cli_setup_option(s, a, argv[*i]);
    return ca->option(opts, a, argv[*i]);
}

int cli_args_parse(const struct cli_args *ca, int argc, char **argv, void *opts,
                   struct cli_setup *s, const char **positional)
{
    cli_setup_init(s);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int rc = CLI_EXIT_OK;
        if (cli_is_flag(a, "-h", "--help")) {
            ca->usage(stdout);
            return CLI_ARGS_HELP;
        }
        if (setup_takes_value(a) || listed(ca->valued, a))
            rc = take_valued(ca, argc, argv, &i, opts, s);
        else if (listed(ca->switches, a))
            rc = setup_switch(s, a) ? CLI_EXIT_OK : ca->option(opts, a, NULL);
        else if (a[0] == '-' && a[1] != '\0')
            return cli_usage_error("%s: unknown option '%s' (see rein %s --help)", ca->name, a,
                                   ca->name);
        else if (!ca->positional)
            return cli_usage_error("%s: unexpected argument '%s' (see rein %s --help)", ca->name, a,
                                   ca->name);
        else if (*positional)
            return cli_usage_error("%s: one %s at a time (quote it)", ca->name, ca->positional);
        else
            *positional = a;
        if (rc)
            return rc;
    }
    if (ca->required && (!*positional || !(*positional)[0])) {
        ca->usage(stderr);
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

bool cli_parse_number(const char *text, long long lo, long long hi, long long *out)
{
    char *end = NULL;
    long long v;

    if (!text || !*text)
        return false;
    errno = 0;
    v = strtoll(text, &end, 10);
    if (*end || errno || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

int cli_timeout_arg(int argc, char **argv, int *i, int64_t *ms)
{
    char *end = NULL;

    if (*i + 1 >= argc)
        return cli_usage_error("--timeout needs milliseconds");
    *ms = strtoll(argv[++*i], &end, 10);
    if (!end || *end || *ms <= 0)
        return cli_usage_error("--timeout needs a positive number of milliseconds");
    return CLI_EXIT_OK;
}

/* ---- signals ---- */

static void *wait_signals(void *arg)
{
    struct cli_sigwatch *w = arg;
    int sig = 0;

    if (sigwait(&w->set, &sig) == 0 && sig != SIGUSR1)
        rein_cancel_trigger(w->cancel, sig == SIGINT ? "interrupted (Ctrl-C)" : "terminated");
    return NULL;
}

void cli_sigwatch_start(struct cli_sigwatch *w, rein_cancel *cancel)
{
    w->cancel = cancel;
    sigemptyset(&w->set);
    sigaddset(&w->set, SIGINT);
    sigaddset(&w->set, SIGTERM);
    sigaddset(&w->set, SIGUSR1); /* wakes the waiter when the run is over */
    pthread_sigmask(SIG_BLOCK, &w->set, &w->old);
    w->waiting = pthread_create(&w->tid, NULL, wait_signals, w) == 0;
}

void cli_sigwatch_stop(struct cli_sigwatch *w)
{
    if (w->waiting) {
        pthread_kill(w->tid, SIGUSR1);
        pthread_join(w->tid, NULL);
        w->waiting = false;
    }
    pthread_sigmask(SIG_SETMASK, &w->old, NULL);
}

/* ---- approvals and output ---- */

rein_err cli_approve_yes(void *ud, const struct rein_agent_approval *req, bool *approved,
                         rein_error *err)
{
    (void)ud;
    (void)req;
    (void)err;
    *approved = true;
    return REIN_OK;
}

void cli_print_json(const json_t *j)
{
    if (!j)
        return;
    json_dumpf(j, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    fputc('\n', stdout);
}
