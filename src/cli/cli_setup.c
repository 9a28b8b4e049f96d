/*
 * What the `rein` subcommands that run tools set up alike: the model options (--provider,
 * --model, --base-url) and the tool folders (--skills, --root) into one struct cli_setup (the
 * argument loop that fills it is cli_args.c), the SIGINT/SIGTERM watch that cancels a run,
 * the --yes approver and JSON output. chat, loop, plan and serve each keep their own options,
 * help text and exit codes; only the shared part lives here.
 */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void cli_setup_init(struct cli_setup *s)
{
    memset(s, 0, sizeof(*s));
    s->config = getenv("REIN_CONFIG");
    s->config_origin = "REIN_CONFIG";
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
    for (size_t k = 0; k < REIN_ARRAY_SIZE(keys); k++) {
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

/* Through rein's writer, never jansson's: jansson prints doubles with 17 digits
 * (2.7999999999999998 for 2.8), and every path must print a number the same way. */
static void print_json(const json_t *j, int indent)
{
    struct rein_buf b;

    if (!j)
        return;
    rein_buf_init(&b, 0);
    if (rein_json_dump_indent(&b, j, indent) == REIN_OK && rein_buf_addch(&b, '\n') == REIN_OK)
        fwrite(b.ptr, 1, b.len, stdout);
    else
        fprintf(stderr, "rein: out of memory writing the output\n");
    rein_buf_release(&b);
}

void cli_print_json(const json_t *j)
{
    print_json(j, 2);
}

void cli_print_json_line(const json_t *j)
{
    print_json(j, 0);
    fflush(stdout);
}
