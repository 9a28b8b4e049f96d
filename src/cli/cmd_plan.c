/*
 * `rein plan`: the plan engine from the command line (include/rein/plan.h).
 *
 *   rein plan QUERY|- [--max-parallel N] [--save FILE] [--json] [--events]
 *             [--provider P] [--model M] [--base-url URL] [--config FILE]
 *             [--skills DIR] [--root DIR] [--verification auto|force|off]
 *             [--max-tool-calls N] [--timeout DURATION] [--max-replans N] [--yes]
 *   rein plan --resume FILE [the same options]
 *   rein plan --show FILE|- [--dot | --json]
 *
 * The planner turns QUERY into a plan, the steps run (up to --max-parallel at once), each is
 * verified against its ledger, a failed one is rewritten or split by the replanner at most
 * --max-replans times (default 2) before it is blocked, and the steps' outputs become the
 * answer. With --save the plan is written after every change, so a run that was killed or
 * interrupted continues with --resume FILE, without running a completed step again.
 *
 * On a terminal a live view on stderr shows every step's state while the plan runs; then
 * the answer, and a table of the steps with their status, attempts and calls. --json prints
 * the result object; --events prints the events as JSON lines. Ctrl-C stops the run (the
 * saved plan can be resumed). Destructive tools are denied unless --yes allows them: a plan
 * runs unattended, with several steps at once, so nobody is asked.
 *
 * Exit status: 0 when every step completed and the answer was written, 1 otherwise, 2 for
 * usage errors, a configuration that cannot work and a plan file that cannot be read.
 */
#include "cli.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DESC_COLS 56

struct plan_opts {
    const char *query;
    const char *resume;
    const char *show;
    const char *save;
    struct rein_plan_opts run;
    struct cli_setup setup;
    const rein_provider *provider; /* borrowed, for meta in --json */
    bool dot;
};

/* The live view: one line per step, redrawn in place on stderr. */
struct view_step {
    enum rein_plan_status status;
    int attempt;
    int shown; /* without escapes: the status + 1 and attempt last printed (0: none) */
    char desc[DESC_COLS * 4 + 1];
    char activity[REIN_TOOL_NAME_MAX + 24];
};

struct view {
    bool live, events;
    enum cli_term term; /* full: redrawn in place; plain: a line per change */
    char shown_phase[64];
    pthread_mutex_t mu;
    struct view_step *steps;
    size_t n;
    int drawn;
    char phase[64];
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: rein plan [options] REQUEST   (or - to read the request from stdin)\n"
            "       rein plan --resume FILE [options]\n"
            "       rein plan --show FILE [--dot | --json]\n\n"
            "Plans the request as steps, runs the ready steps (several at once), checks each\n"
            "step's tool calls, rewrites or splits a step that failed (at most --max-replans\n"
            "times, default 2, then it is blocked and what depends on it skipped), and writes\n"
            "the answer from the steps' results. rein plan needs a model: --provider and\n"
            "--model, REIN_PROVIDER and REIN_MODEL, or a provider in rein's configuration file\n"
            "(--config or REIN_CONFIG).\n\n"
            "  --max-parallel N      steps running at once (default 4)\n"
            "  --save FILE           write the plan after every change (resume it with --resume)\n"
            "  --resume FILE         continue a saved plan; completed steps do not run again\n"
            "  --show FILE           print a saved plan (- reads stdin); --dot as a Graphviz\n"
            "                        digraph, --json as JSON\n"
            "  --json                print the result object; --events the events as JSON lines\n"
            "  --verification V      self-verification of each step: auto, force, off\n"
            "  --timeout DURATION    time limit of each step's turn (milliseconds, or 30s, 2m)\n"
            "  --max-tool-calls N    tool calls per step; --max-replans N (0: none)\n"
            "  --yes                 allow destructive tools (otherwise they are denied)\n"
            "  --provider P, --model M, --base-url URL   the model, as for 'rein chat'\n"
            "  --config FILE         rein's configuration file (default REIN_CONFIG)\n"
            "  --skills DIR, --root DIR   as for 'rein skills'\n\n"
            "Exit status: 0 every step completed, 1 otherwise, 2 usage, a configuration that\n"
            "cannot work, or a plan file that cannot be read.\n");
}

/* ---- options ---- */

static int plan_number(struct plan_opts *o, const char *flag, const char *v)
{
    bool replans = strcmp(flag, "--max-replans") == 0;
    long long n;
    int64_t ms;

    if (strcmp(flag, "--timeout") == 0) {
        if (!cli_parse_duration(v, 1, INT32_MAX, &ms))
            return cli_duration_error("plan", flag, v);
        o->run.step.timeout_ms = ms;
        return CLI_EXIT_OK;
    }
    if (!cli_parse_number(v, replans ? 0 : 1, replans ? 100 : INT32_MAX, &n))
        return cli_usage_error("%s needs a %s number, not '%s'", flag,
                               replans ? "non-negative" : "positive", v);
    if (strcmp(flag, "--max-parallel") == 0)
        o->run.max_parallel = (unsigned)(n > 64 ? 64 : n);
    else if (replans)
        o->run.max_replans = n == 0 ? -1 : (int)n;
    else
        o->run.step.max_tool_calls = (int)n;
    return CLI_EXIT_OK;
}

static int plan_option(void *opts, const char *flag, const char *v)
{
    struct plan_opts *o = opts;

    if (!v) {
        o->dot = true; /* the one switch of its own */
    } else if (strcmp(flag, "--max-parallel") == 0 || strcmp(flag, "--max-replans") == 0 ||
               strcmp(flag, "--max-tool-calls") == 0 || strcmp(flag, "--timeout") == 0) {
        return plan_number(o, flag, v);
    } else if (strcmp(flag, "--verification") == 0) {
        if (!rein_agent_verification_parse(v, &o->run.step.verification))
            return cli_usage_error("--verification takes auto, force or off, not '%s'", v);
    } else if (strcmp(flag, "--save") == 0) {
        o->save = v;
    } else if (strcmp(flag, "--resume") == 0) {
        o->resume = v;
    } else {
        o->show = v;
    }
    return CLI_EXIT_OK;
}

static int parse_args(int argc, char **argv, struct plan_opts *o)
{
    static const char *const valued[] = {"--max-parallel", "--save",         "--resume",
                                         "--show",         "--verification", "--max-tool-calls",
                                         "--timeout",      "--max-replans",  NULL};
    static const char *const switches[] = {"--dot", NULL};
    static const struct cli_args args = {
        .name = "plan",
        .usage = usage,
        .shared = CLI_OPT_MODEL | CLI_OPT_TOOLS | CLI_OPT_JSON | CLI_OPT_EVENTS | CLI_OPT_YES,
        .valued = valued,
        .switches = switches,
        .option = plan_option,
        .positional = "request",
        .max_pos = 1,
        .stdin_pos = 1,
    };
    int rc;

    rc = cli_args_parse(&args, argc, argv, o, &o->setup, &o->query, NULL);
    if (rc)
        return rc;
    if ((o->show ? 1 : 0) + (o->resume ? 1 : 0) + (o->query ? 1 : 0) != 1) {
        usage(stderr);
        return cli_usage_error("plan: give a request, --resume FILE or --show FILE (one of them)");
    }
    if (o->query && !o->query[0])
        return cli_usage_error("plan: the request is empty");
    if (o->dot && !o->show)
        return cli_usage_error("plan: --dot goes with --show");
    if (o->dot && o->setup.json)
        return cli_usage_error("plan: --dot and --json do not go together");
    if (o->setup.json && o->setup.events)
        return cli_usage_error("plan: --json and --events do not go together");
    return CLI_EXIT_OK;
}

/* ---- the live view ---- */

/* Copies at most cols bytes of s into out (size bytes), cut at a character boundary, with
 * newlines as spaces. */
static void copy_cut(char *out, size_t size, const char *s, size_t cols)
{
    size_t n = strlen(s);

    if (n > cols) {
        n = cols;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--;
    }
    if (n >= size)
        n = size - 1;
    for (size_t k = 0; k < n; k++)
        out[k] = s[k] == '\n' || s[k] == '\t' ? ' ' : s[k];
    out[n] = '\0';
    if (n < strlen(s) && n + 4 <= size)
        memcpy(out + n, "…", 4);
}

static const char *mark(enum rein_plan_status s)
{
    switch (s) {
    case REIN_PLAN_IN_PROGRESS:
        return "▸";
    case REIN_PLAN_COMPLETED:
        return "✓";
    case REIN_PLAN_BLOCKED:
        return "✗";
    case REIN_PLAN_SKIPPED:
        return "-";
    default:
        return "·";
    }
}

/* NO_COLOR or TERM=dumb: no cursor movement, so each change gets a line of its own. */
static void draw_plain(struct view *v)
{
    if (strcmp(v->phase, v->shown_phase) != 0) {
        fprintf(stderr, "%s\n", v->phase);
        snprintf(v->shown_phase, sizeof(v->shown_phase), "%s", v->phase);
    }
    for (size_t i = 0; i < v->n; i++) {
        struct view_step *s = &v->steps[i];
        int now = ((int)s->status + 1) * 1000 + s->attempt;
        if (s->shown == now)
            continue;
        s->shown = now;
        fprintf(stderr, "  %s %2zu %s %s", mark(s->status), i, s->desc,
                rein_plan_status_name(s->status));
        if (s->attempt > 1)
            fprintf(stderr, " (attempt %d)", s->attempt);
        fputc('\n', stderr);
    }
    fflush(stderr);
}

static void draw(struct view *v)
{
    if (v->term == CLI_TERM_PLAIN) {
        draw_plain(v);
        return;
    }
    if (v->drawn > 0)
        fprintf(stderr, "\033[%dA", v->drawn);
    v->drawn = 0;
    fprintf(stderr, "\r\033[K%s\n", v->phase);
    v->drawn++;
    for (size_t i = 0; i < v->n; i++) {
        const struct view_step *s = &v->steps[i];
        fprintf(stderr, "\r\033[K  %s %2zu %-*s %s%s%s", mark(s->status), i, DESC_COLS, s->desc,
                rein_plan_status_name(s->status), s->activity[0] ? " · " : "", s->activity);
        if (s->attempt > 1)
            fprintf(stderr, " (attempt %d)", s->attempt);
        fputc('\n', stderr);
        v->drawn++;
    }
    fflush(stderr);
}

static void load_steps(struct view *v, const json_t *plan)
{
    const json_t *steps = json_object_get(plan, "steps");
    const json_t *statuses = json_object_get(plan, "step_statuses");
    const json_t *replans = json_object_get(plan, "replan_attempts");
    size_t n = json_array_size(steps), i;
    struct view_step *vs = rein_calloc(n ? n : 1, sizeof(*vs));
    json_t *d;

    if (!vs)
        return;
    json_array_foreach(steps, i, d)
    {
        char key[24];
        snprintf(key, sizeof(key), "%zu", i);
        (void)rein_plan_status_parse(json_string_value(json_object_get(statuses, key)),
                                     &vs[i].status);
        vs[i].attempt = (int)json_integer_value(json_object_get(replans, key)) + 1;
        copy_cut(vs[i].desc, sizeof(vs[i].desc), json_string_value(d), DESC_COLS);
    }
    rein_free(v->steps);
    v->steps = vs;
    v->n = n;
    snprintf(v->phase, sizeof(v->phase), "Running the plan (%zu step%s)", n, n == 1 ? "" : "s");
}

static void update_view(struct view *v, const struct rein_plan_event *ev)
{
    struct view_step *s = ev->step >= 0 && (size_t)ev->step < v->n ? &v->steps[ev->step] : NULL;

    switch (ev->type) {
    case REIN_PLAN_EV_PLAN:
        load_steps(v, ev->data);
        break;
    case REIN_PLAN_EV_STEP:
        if (!s)
            return;
        s->status = ev->status;
        s->attempt = ev->attempt;
        s->activity[0] = '\0';
        copy_cut(s->desc, sizeof(s->desc), ev->text, DESC_COLS);
        break;
    case REIN_PLAN_EV_REPLAN:
        if (s)
            snprintf(s->activity, sizeof(s->activity), "replanned: %s", ev->text);
        break;
    case REIN_PLAN_EV_AGENT:
        if (ev->agent->type != REIN_AGENT_EV_STATUS)
            return;
        if (strcmp(ev->phase, "plan") == 0) {
            snprintf(v->phase, sizeof(v->phase), "Planning…");
        } else if (strcmp(ev->phase, "answer") == 0) {
            snprintf(v->phase, sizeof(v->phase), "Writing the answer…");
        } else if (s) {
            const char *st = rein_agent_state_name(ev->agent->state);
            if (strcmp(ev->phase, "replan") == 0)
                snprintf(s->activity, sizeof(s->activity), "replanning");
            else if (ev->agent->state == REIN_AGENT_STATE_IDLE)
                s->activity[0] = '\0';
            else
                snprintf(s->activity, sizeof(s->activity), "%s%s%s", st, ev->agent->tool ? " " : "",
                         ev->agent->tool ? ev->agent->tool : "");
        } else {
            return;
        }
        break;
    case REIN_PLAN_EV_FINAL:
        snprintf(v->phase, sizeof(v->phase), "Finished: %s", ev->stop_reason);
        break;
    default:
        return;
    }
    draw(v);
}

static void on_event(const struct rein_plan_event *ev, void *ud)
{
    struct view *v = ud;

    pthread_mutex_lock(&v->mu);
    if (v->events) {
        struct rein_buf b;
        rein_buf_init(&b, 0);
        if (rein_plan_event_write(ev, &b) == REIN_OK) {
            fwrite(b.ptr, 1, b.len, stdout);
            fputc('\n', stdout);
            fflush(stdout);
        }
        rein_buf_release(&b);
    }
    if (v->live)
        update_view(v, ev);
    pthread_mutex_unlock(&v->mu);
}

/* ---- approvals ---- */

static rein_err approve_no(void *ud, const struct rein_agent_approval *req, bool *approved,
                           rein_error *err)
{
    (void)ud;
    *approved = false;
    return rein_error_set(err, REIN_EDENIED,
                          "%s is destructive and rein plan runs unattended: pass --yes to allow "
                          "destructive tools",
                          req->tool);
}

/* ---- output ---- */

static void print_table(const rein_plan_result *r)
{
    const rein_plan *p = rein_plan_result_plan(r);
    json_t *j = rein_plan_result_json(r);
    const json_t *meta = json_object_get(j, "meta");

    printf("\n  %-3s %-11s %-8s %-5s %s\n", "#", "STATUS", "ATTEMPTS", "CALLS", "STEP");
    for (size_t i = 0; i < rein_plan_step_count(p); i++) {
        char desc[DESC_COLS * 4 + 1];
        copy_cut(desc, sizeof(desc), rein_plan_step_description(p, i), DESC_COLS);
        printf("  %-3zu %-11s %-8lld %-5zu %s\n", i,
               rein_plan_status_name(rein_plan_step_status(p, i)),
               (long long)json_integer_value(
                   json_object_get(json_array_get(json_object_get(j, "steps"), i), "attempts")),
               json_array_size(rein_plan_step_history(p, i)), desc);
        if (rein_plan_step_note(p, i) && rein_plan_step_status(p, i) != REIN_PLAN_COMPLETED) {
            copy_cut(desc, sizeof(desc), rein_plan_step_note(p, i), 100);
            printf("      %s\n", desc);
        }
    }
    printf("\n(%s · %lld model calls · %lld tokens · %.1f s)\n", rein_plan_result_stop_reason(r),
           (long long)json_integer_value(json_object_get(meta, "model_calls")),
           (long long)json_integer_value(json_object_get(meta, "total_tokens")),
           (double)json_integer_value(json_object_get(meta, "latency_ms")) / 1000.0);
    json_decref(j);
}

static void print_result(const struct plan_opts *o, const rein_plan_result *r, bool tty)
{
    if (o->setup.json) {
        json_t *j = rein_plan_result_json(r);
        cli_json_add_provider(j, o->provider);
        cli_print_json(j);
        json_decref(j);
        return;
    }
    if (o->setup.events)
        return; /* the final event carried the answer */
    puts(rein_plan_result_answer(r));
    if (tty)
        print_table(r);
    else if (!rein_plan_result_success(r))
        fprintf(stderr, "rein: the plan did not complete: %s%s%s\n",
                rein_plan_result_stop_reason(r), rein_plan_result_detail(r)[0] ? ": " : "",
                rein_plan_result_detail(r));
}

/* ---- the commands ---- */

/* The saved plan at path ("-": stdin). New, or NULL with err set. */
static rein_plan *load_plan(const char *path, rein_error *err)
{
    char *text = NULL;
    size_t len = 0;
    json_t *doc;
    rein_plan *p;
    int rc;

    if (strcmp(path, "-") != 0)
        return rein_plan_load_file(path, err);
    rc = cli_read_stdin(&text, &len);
    if (rc) {
        rein_error_set(err, REIN_EIO, "stdin: cannot read the plan");
        return NULL;
    }
    doc = rein_json_parse(text, len, 0, err);
    p = doc ? rein_plan_from_json(doc, err) : NULL;
    if (!p)
        rein_error_prefix(err, "stdin: ");
    json_decref(doc);
    rein_free(text);
    return p;
}

static int show(const struct plan_opts *o)
{
    rein_error err = {0};
    rein_plan *p;
    struct rein_buf b;
    rein_err rc;

    rein_error_clear(&err);
    p = load_plan(o->show, &err);
    if (!p) {
        cli_print_error(&err);
        return CLI_EXIT_USAGE;
    }
    if (o->setup.json) {
        json_t *j = rein_plan_to_json(p);
        rc = j ? REIN_OK : REIN_ENOMEM;
        cli_print_json(j);
        json_decref(j);
        rein_plan_free(p);
        return rc ? CLI_EXIT_FAIL : CLI_EXIT_OK;
    }
    rein_buf_init(&b, 0);
    rc = o->dot ? rein_plan_write_dot(p, &b) : rein_plan_write_text(p, &b);
    if (rc == REIN_OK)
        fwrite(b.ptr, 1, b.len, stdout);
    rein_buf_release(&b);
    rein_plan_free(p);
    return rc ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

static int run(struct plan_opts *o, rein_planner *pl, rein_plan *loaded, struct view *v)
{
    struct cli_sigwatch w;
    rein_plan_result *r = NULL;
    rein_cancel *cancel = rein_cancel_new();
    bool tty = isatty(STDOUT_FILENO) && !o->setup.json && !o->setup.events;
    rein_error err = {0};
    rein_err rc;
    int status = CLI_EXIT_FAIL;

    if (!cancel) {
        rein_plan_free(loaded);
        return CLI_EXIT_FAIL;
    }
    o->run.cancel = cancel;
    o->run.on_event = v->live || v->events ? on_event : NULL;
    o->run.event_data = v;
    o->run.save_path = o->save ? o->save : o->resume;
    o->run.step.approve = o->setup.yes ? cli_approve_yes : approve_no;
    cli_sigwatch_start(&w, cancel);
    if (v->live) {
        pthread_mutex_lock(&v->mu);
        snprintf(v->phase, sizeof(v->phase), "%s", loaded ? "Resuming the plan" : "Planning…");
        draw(v);
        pthread_mutex_unlock(&v->mu);
    }

    rein_error_clear(&err);
    rc = loaded ? rein_planner_execute(pl, loaded, &o->run, &r, &err)
                : rein_planner_run(pl, o->query, &o->run, &r, &err);
    if (rc)
        cli_print_error(&err);
    else
        status = rein_plan_result_success(r) ? CLI_EXIT_OK : CLI_EXIT_FAIL;

    cli_sigwatch_stop(&w);
    if (r)
        print_result(o, r, tty);
    if (r && o->run.save_path && tty)
        fprintf(stderr, "(plan saved to %s)\n", o->run.save_path);
    rein_plan_result_free(r);
    rein_cancel_unref(cancel);
    return status;
}

int cmd_plan(int argc, char **argv)
{
    struct plan_opts o;
    struct view v;
    struct cli_parts parts = {0};
    rein_planner *pl = NULL;
    rein_plan *loaded = NULL;
    rein_error err = {0};
    int status;

    memset(&o, 0, sizeof(o));
    memset(&v, 0, sizeof(v));
    status = parse_args(argc, argv, &o);
    if (status)
        return status == CLI_ARGS_HELP ? CLI_EXIT_OK : status;
    if (o.show)
        return show(&o);
    rein_error_clear(&err);
    if (o.resume) {
        loaded = rein_plan_load_file(o.resume, &err);
        if (!loaded) {
            cli_print_error(&err);
            return CLI_EXIT_USAGE;
        }
    }
    if (!cli_provider_configured(&o.setup)) {
        rein_plan_free(loaded);
        return cli_usage_error("plan: a plan needs a model: set --provider and --model (or "
                               "REIN_PROVIDER and REIN_MODEL, or a provider in rein's "
                               "configuration file, --config FILE or REIN_CONFIG)");
    }
    status = CLI_EXIT_FAIL;
    if (cli_parts_new(&o.setup, false, &parts, &err) != REIN_OK ||
        !(parts.mcp = cli_mcp_join(parts.reg, &o.setup, &err))) {
        cli_print_error(&err);
        if ((!parts.provider || parts.reg) && err.code == REIN_EINVAL)
            status = CLI_EXIT_USAGE; /* a bad provider or MCP configuration */
        goto out;
    }
    o.provider = parts.provider;
    pl = rein_planner_new(parts.provider, parts.reg, &err);
    if (!pl) {
        cli_print_error(&err);
        goto out;
    }
    pthread_mutex_init(&v.mu, NULL);
    v.events = o.setup.events;
    v.term = o.setup.events ? CLI_TERM_NONE : cli_term_of(STDERR_FILENO);
    v.live = v.term != CLI_TERM_NONE;
    status = run(&o, pl, loaded, &v);
    loaded = NULL; /* taken by the run */
    pthread_mutex_destroy(&v.mu);
    rein_free(v.steps);
out:
    rein_plan_free(loaded);
    rein_planner_free(pl);
    cli_parts_release(&parts);
    return status;
}
