/*
 * `rein loop`: the verification loop from the command line (include/rein/loop.h).
 *
 *   rein loop GOAL [--until NAME[,NAME...]] [--max-iterations N] [--protocols FILE]
 *             [--verify-mode minimal|standard|thorough|full] [--judge] [--judge-model M]
 *             [--json] [--events] [--provider P] [--model M] [--base-url URL]
 *             [--config FILE] [--skills DIR] [--root DIR] [--base REV]
 *             [--timeout DURATION] [--max-tokens N] [--max-tool-calls N] [--keep-going]
 *             [--yes] [--conversation ID] [--store URL]
 *
 * The agent works on GOAL in the current directory with the tools of the registry: the
 * built-in skills plus the skills of REIN_SKILLS_PATH and --skills (rein has no general
 * write or exec tool of its own: the tools that change the tree are skills the user chose).
 * After each answer the protocols of rein-verify.yaml (or --protocols FILE, as for `rein
 * verify`) run, and what failed goes back to the agent, until the protocols named in --until
 * pass or the loop stops for a named reason. Without a protocol file the criteria are derived
 * from GOAL's verbs and the project (printed before the first iteration). The model comes
 * from the provider flags, the environment, and rein's configuration file (--config, else
 * REIN_CONFIG), as for
 * `rein chat`; the judge (--judge) uses the same provider, or --judge-model on it.
 *
 * Progress goes to stderr, one line per step; the outcome to stdout: the reason, what was
 * tried and what a person should do (--json: the result object; --events: the agent's and
 * the loop's events as JSON lines). Destructive tools are refused unless --yes is given:
 * nobody watches a loop to approve them. Ctrl-C stops the loop (cancelled).
 *
 * --conversation ID keeps the loop's conversation in the store (--store URL, REIN_STORE, or
 * sqlite:./rein.db) through the session module (include/rein/session.h), as `rein chat
 * --conversation` does: locked while the loop runs, every turn's messages, ledger and events
 * written as they happen, so the conversation can be read, replayed or continued later.
 *
 * Exit status: 0 the criteria hold (success, success_with_warnings); 1 the loop stopped
 * without them; 2 usage or a configuration that cannot work (no protocol file, an --until
 * name it does not declare, no model); 3 the checks hold but a person must review (the
 * judge said NEEDS_REVIEW or gave no valid verdict, or layer 6 asked for review). A failing
 * P0 protocol stops the loop (blocking_failure) unless --keep-going is given.
 */
#include "cli.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define CLI_EXIT_REVIEW 3
#define MAX_UNTIL       32

struct loop_opts {
    const char *goal;
    const char *protocols;  /* --protocols: the protocol file */
    struct cli_setup setup; /* the model and the tools; --config is rein's configuration */
    const char *judge_model;
    char *until_text;
    const char *until[MAX_UNTIL + 1];
    bool has_until;
    const char *base;
    enum rein_verify_mode mode;
    int max_iterations;
    struct rein_agent_turn_opts turn;
    bool judge, keep_going;
    const char *conversation, *store_url;
};

struct out {
    const struct loop_opts *o;
    pthread_mutex_t mu;
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: rein loop [options] GOAL\n"
            "       rein loop [options] -      (the goal from stdin)\n\n"
            "Lets the agent work on GOAL in the current directory until the verification\n"
            "protocols hold: after each answer the protocols run, and what failed (with the end\n"
            "of its output, and any claim its calls or the tree refute) goes back to the agent.\n"
            "The loop stops with a named reason: success, same_error (the same failure 3 times in "
            "a row),\n"
            "no_progress (5 iterations), repeated_state, oscillation, max_iterations (extended\n"
            "by half once when the last iterations made progress), blocking_failure (a P0\n"
            "protocol failed), needs_review, ... Without rein-verify.yaml the criteria come\n"
            "from GOAL's verbs (implement/add, fix, refactor; 實作/新增, 修復, 重構 and the\n"
            "simplified forms) and the project (tests, linter, TypeScript), shown first.\n"
            "rein loop needs a model: --provider and --model, REIN_PROVIDER and REIN_MODEL, or\n"
            "a provider in rein's configuration file (--config or REIN_CONFIG).\n\n"
            "  --until NAMES         protocols that must pass (default: all the mode selects)\n"
            "  --max-iterations N    iteration limit (default 10)\n"
            "  --protocols FILE      protocol file (default rein-verify.yaml/.yml/.json here)\n"
            "  --verify-mode MODE    verification layers, as for 'rein verify'\n"
            "  --judge               ask an LLM judge about the diff once the checks pass;\n"
            "                        NEEDS_REVIEW stops for a person (exit 3)\n"
            "  --judge-model M       the judge's model (default: the agent's)\n"
            "  --provider P, --model M, --base-url URL   the model, as for 'rein chat'\n"
            "  --config FILE         rein's configuration file (default REIN_CONFIG)\n"
            "  --skills DIR          load skills (the tools that change files) from DIR\n"
            "  --root DIR            folders the built-in skills may read (default: here)\n"
            "  --base REV            compare changes, claims and the diff with REV, not HEAD\n"
            "  --timeout DURATION, --max-tokens N, --max-tool-calls N: limits of each agent turn\n"
            "  --keep-going          iterate on after a P0 protocol fails (default: stop)\n"
            "  --verification V      self-verification of the agent's calls: auto (destructive\n"
            "                        calls, and calls without a stated confidence >= 0.8),\n"
            "                        force or off\n"
            "  --yes                 allow destructive tools (refused otherwise)\n"
            "  --json                print the result object; --events: events as JSON lines\n"
            "  --conversation ID     keep the loop's conversation in the store (--store URL,\n"
            "                        default REIN_STORE or sqlite:./rein.db), locked meanwhile\n"
            "Old spellings that still work, with a warning: --provider-config (--config),\n"
            "--mode (--verify-mode), --config with a protocol file (--protocols).\n\n"
            "Exit status: 0 the criteria hold, 1 stopped without them, 2 usage or unusable\n"
            "configuration, 3 a person must review (the judge's NEEDS_REVIEW).\n");
}

/* ---- options ---- */

static int split_until(struct loop_opts *o, const char *text)
{
    size_t n = 0;

    rein_free(o->until_text);
    o->until_text = rein_strdup(text);
    if (!o->until_text)
        return cli_usage_error("out of memory");
    for (char *p = o->until_text; p;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        while (*p == ' ')
            p++;
        if (*p) {
            if (n == MAX_UNTIL)
                return cli_usage_error("--until names too many protocols");
            o->until[n++] = p;
        }
        p = comma ? comma + 1 : NULL;
    }
    o->until[n] = NULL;
    if (n == 0)
        return cli_usage_error("--until needs protocol names, e.g. --until TEST,LINT");
    o->has_until = true;
    return CLI_EXIT_OK;
}

static int parse_number(struct loop_opts *o, const char *flag, const char *v)
{
    long long n;
    int64_t ms;

    if (strcmp(flag, "--timeout") == 0) {
        if (!cli_parse_duration(v, 1, INT32_MAX, &ms))
            return cli_duration_error("loop", flag, v);
        o->turn.timeout_ms = ms;
        return CLI_EXIT_OK;
    }
    if (!cli_parse_number(v, 1, INT32_MAX, &n))
        return cli_usage_error("%s needs a positive number, not '%s'", flag, v);
    if (strcmp(flag, "--max-iterations") == 0)
        o->max_iterations = (int)n;
    else if (strcmp(flag, "--max-tokens") == 0)
        o->turn.max_tokens = n;
    else
        o->turn.max_tool_calls = (int)n;
    return CLI_EXIT_OK;
}

static int switch_flag(struct loop_opts *o, const char *a)
{
    if (strcmp(a, "--judge") == 0)
        o->judge = true;
    else if (strcmp(a, "--keep-going") == 0)
        o->keep_going = true;
    /* --stop-on-blocking is the default now; it is still accepted. */
    return CLI_EXIT_OK;
}

static int loop_option(void *opts, const char *flag, const char *v)
{
    struct loop_opts *o = opts;

    if (!v)
        return switch_flag(o, flag);
    if (strcmp(flag, "--until") == 0)
        return split_until(o, v);
    if (strcmp(flag, "--max-iterations") == 0 || strcmp(flag, "--timeout") == 0 ||
        strcmp(flag, "--max-tokens") == 0 || strcmp(flag, "--max-tool-calls") == 0)
        return parse_number(o, flag, v);
    if (strcmp(flag, "--verify-mode") == 0) {
        if (!rein_verify_mode_parse(v, &o->mode))
            return cli_usage_error("--verify-mode takes minimal, standard, thorough or full, not "
                                   "'%s'",
                                   v);
    } else if (strcmp(flag, "--verification") == 0) {
        if (!rein_agent_verification_parse(v, &o->turn.verification))
            return cli_usage_error("--verification takes auto, force or off, not '%s'", v);
    } else if (strcmp(flag, "--protocols") == 0) {
        o->protocols = v;
    } else if (strcmp(flag, "--config") == 0) {
        /* --config once named the protocol file here; such a file still works that way. */
        if (cli_is_protocol_file(v)) {
            cli_deprecated("loop", "--config with a protocol file", "--protocols FILE");
            o->protocols = v;
        } else {
            o->setup.config = v;
            o->setup.config_origin = NULL;
        }
    } else if (strcmp(flag, "--judge-model") == 0) {
        o->judge_model = v;
        o->judge = true;
    } else if (strcmp(flag, "--conversation") == 0) {
        return cli_conversation_option(v, &o->conversation);
    } else if (strcmp(flag, "--store") == 0) {
        o->store_url = v;
    } else {
        o->base = v;
    }
    return CLI_EXIT_OK;
}

static int parse_args(int argc, char **argv, struct loop_opts *o)
{
    static const char *const valued[] = {"--until",        "--max-iterations",
                                         "--protocols",    "--verify-mode",
                                         "--config",       "--base",
                                         "--judge-model",  "--timeout",
                                         "--max-tokens",   "--max-tool-calls",
                                         "--verification", "--conversation",
                                         "--store",        NULL};
    static const char *const switches[] = {"--judge", "--keep-going", "--stop-on-blocking", NULL};
    static const struct cli_alias aliases[] = {{"--provider-config", "--config", false},
                                               {"--mode", "--verify-mode", false},
                                               {NULL, NULL, false}};
    static const struct cli_args args = {
        .name = "loop",
        .usage = usage,
        .shared = CLI_OPT_MODEL | CLI_OPT_TOOLS | CLI_OPT_JSON | CLI_OPT_EVENTS | CLI_OPT_YES,
        .valued = valued,
        .switches = switches,
        .aliases = aliases,
        .option = loop_option,
        .positional = "goal",
        .min_pos = 1,
        .max_pos = 1,
        .stdin_pos = 1,
    };
    int rc = cli_args_parse(&args, argc, argv, o, &o->setup, &o->goal, NULL);

    if (rc == CLI_EXIT_OK && !o->goal[0])
        return cli_usage_error("loop: the goal is empty");
    return rc;
}

/* ---- what the loop needs ---- */

/* The protocol file, or NULL with *derive set when there is none here: the loop then
 * derives the criteria from the goal. */
static rein_verify_config *load_protocols(const struct loop_opts *o, bool *derive, rein_error *err)
{
    rein_verify_config *cfg = o->protocols ? rein_verify_config_load(o->protocols, err)
                                           : rein_verify_config_find(NULL, err);

    *derive = !cfg && !o->protocols && err->code == REIN_ENOTFOUND;
    return cfg;
}

/* ---- approvals, events, output ---- */

static rein_err refuse_destructive(void *ud, const struct rein_agent_approval *req, bool *approved,
                                   rein_error *err)
{
    (void)ud;
    *approved = false;
    return rein_error_set(err, REIN_EDENIED,
                          "%s is destructive and nobody approves calls in a loop (run rein loop "
                          "with --yes to allow destructive tools)",
                          req->tool);
}

static void print_json_line(struct out *w, const char *text, size_t len)
{
    pthread_mutex_lock(&w->mu);
    fwrite(text, 1, len, stdout);
    fputc('\n', stdout);
    fflush(stdout);
    pthread_mutex_unlock(&w->mu);
}

static void on_agent_event(const struct rein_agent_event *ev, void *ud)
{
    struct out *w = ud;
    struct rein_buf b;

    rein_buf_init(&b, 0);
    if (rein_agent_event_write(ev, &b) == REIN_OK)
        print_json_line(w, b.ptr, b.len);
    rein_buf_release(&b);
}

/* The same for a loop in a session: the agent's events, not the session's start and result. */
static void on_session_event(const struct rein_session_event *ev, void *ud)
{
    struct out *w = ud;

    if (ev->agent && w->o->setup.events)
        print_json_line(w, ev->json, ev->len);
}

/* The words for a stop reason's name in an event. */
static const char *reason_text(const char *name)
{
    for (int r = REIN_VERIFY_STOP_NONE; r <= (int)REIN_VERIFY_STOP_ERROR; r++) {
        if (name &&
            strcmp(name, rein_verify_stop_reason_name((enum rein_verify_stop_reason)r)) == 0)
            return rein_verify_stop_reason_text((enum rein_verify_stop_reason)r);
    }
    return name ? name : "the loop stopped";
}

/* One line on stderr per step of the loop, for a person watching. */
static void print_progress(const json_t *ev)
{
    const char *type = json_string_value(json_object_get(ev, "type"));
    int n = (int)json_integer_value(json_object_get(ev, "iteration"));

    if (strcmp(type, "criteria") == 0) {
        const json_t *c = json_object_get(ev, "criteria"), *k;
        size_t i;
        fprintf(stderr, "rein: no protocol file: criteria derived from the goal and the "
                        "project:\n");
        json_array_foreach(json_object_get(c, "criteria"), i, k)
        {
            const char *why = json_string_value(json_object_get(k, "why"));
            fprintf(stderr, "rein:   %s %-22s %-13s (%s)%s%s\n",
                    json_string_value(json_object_get(k, "priority")),
                    json_string_value(json_object_get(k, "id")),
                    json_string_value(json_object_get(k, "protocol")),
                    json_string_value(json_object_get(k, "source")), why ? ": not checked, " : "",
                    why ? why : "");
        }
    } else if (strcmp(type, "iteration") == 0) {
        fprintf(stderr, "rein: iteration %d of %lld: the agent is working\n", n,
                (long long)json_integer_value(json_object_get(ev, "max_iterations")));
    } else if (strcmp(type, "agent") == 0) {
        fprintf(stderr, "rein: iteration %d: the agent answered (%s, %lld tool calls); checking\n",
                n, json_string_value(json_object_get(ev, "stop_reason")),
                (long long)json_integer_value(json_object_get(ev, "tool_calls")));
    } else if (strcmp(type, "report") == 0) {
        const json_t *r = json_object_get(ev, "report"), *p;
        size_t i;
        fprintf(stderr, "rein: iteration %d: %s", n,
                json_string_value(json_object_get(r, "verdict")));
        json_array_foreach(json_object_get(r, "protocols"), i, p)
        {
            const char *st = json_string_value(json_object_get(p, "status"));
            if (strcmp(st, "skipped") != 0)
                fprintf(stderr, " %s:%s", json_string_value(json_object_get(p, "name")), st);
        }
        fputc('\n', stderr);
    } else if (strcmp(type, "judge") == 0) {
        const json_t *j = json_object_get(ev, "judge");
        fprintf(stderr, "rein: iteration %d: the judge says %s\n", n,
                json_string_value(json_object_get(j, "verdict")));
    } else if (strcmp(type, "decision") == 0) {
        bool stop = strcmp(json_string_value(json_object_get(ev, "action")), "stop") == 0;
        if (stop)
            fprintf(stderr, "rein: iteration %d: stopping: %s\n", n,
                    reason_text(json_string_value(json_object_get(ev, "reason"))));
        else
            fprintf(stderr,
                    "rein: iteration %d: the criteria do not hold yet; the agent tries again\n", n);
    }
}

static void on_loop_event(const json_t *ev, void *ud)
{
    struct out *w = ud;

    if (w->o->setup.events) {
        char *text = rein_json_dumps(ev);
        if (text)
            print_json_line(w, text, strlen(text));
        rein_free(text);
    } else if (!w->o->setup.json) {
        print_progress(ev);
    }
}

static void print_judge(const rein_verify_judge_result *j)
{
    const json_t *reply = rein_verify_judge_result_reply(j), *risk;
    size_t i;

    if (!reply) {
        printf("Judge: UNVERIFIABLE: %s\n", rein_verify_judge_result_reason(j));
        return;
    }
    printf("Judge: %s (functionality %g/10, quality %g/10): %s\n",
           rein_verify_judge_verdict_name(rein_verify_judge_result_verdict(j)),
           json_number_value(json_object_get(reply, "functionality_score")),
           json_number_value(json_object_get(reply, "quality_score")),
           rein_verify_judge_result_reason(j));
    json_array_foreach(json_object_get(reply, "risks"), i, risk)
    {
        printf("  risk: %s\n", json_string_value(risk));
    }
}

static void print_result(const struct loop_opts *o, const rein_loop_result *r,
                         const rein_provider *provider)
{
    enum rein_verify_stop_reason reason = rein_loop_result_reason(r);
    int n = rein_loop_result_iterations(r);

    if (o->setup.json) {
        json_t *j = rein_loop_result_json(r);
        cli_json_add_provider(j, provider);
        cli_print_json(j);
        json_decref(j);
        return;
    }
    if (o->setup.events)
        return; /* the last event, the decision, carried the outcome */
    if (rein_loop_result_success(r))
        printf("%s after %d iteration%s.\n", rein_verify_verdict_name(rein_loop_result_verdict(r)),
               n, n == 1 ? "" : "s");
    else if (rein_loop_result_needs_review(r))
        printf("NEEDS REVIEW after %d iteration%s: a person must look before this counts.\n", n,
               n == 1 ? "" : "s");
    else
        printf("Stopped after %d iteration%s: %s (verdict %s).\n", n, n == 1 ? "" : "s",
               rein_verify_stop_reason_text(reason),
               rein_verify_verdict_name(rein_loop_result_verdict(r)));
    printf("%s\n", rein_loop_result_message(r));
    if (rein_loop_result_judge(r))
        print_judge(rein_loop_result_judge(r));
    if (rein_loop_result_suggestion(r)[0])
        printf("What to do: %s\n", rein_loop_result_suggestion(r));
}

/* ---- the command ---- */

struct parts {
    rein_verify_config *protocols; /* NULL: derived from the goal */
    bool derive;
    struct cli_parts c; /* the provider, the registry, the agent */
    rein_provider *judge;
    rein_cancel *cancel;
    rein_store *store;     /* with --conversation */
    rein_session *session; /* with --conversation */
};

static int setup(const struct loop_opts *o, struct parts *p, rein_error *err)
{
    p->protocols = load_protocols(o, &p->derive, err);
    if (!p->protocols && !p->derive)
        return CLI_EXIT_USAGE;
    if (!cli_provider_configured(&o->setup)) {
        rein_error_set(err, REIN_EINVAL,
                       "rein loop needs a model: --provider and --model (or REIN_PROVIDER and "
                       "REIN_MODEL, or a provider in rein's configuration file, --config FILE or "
                       "REIN_CONFIG)");
        return CLI_EXIT_USAGE;
    }
    if (cli_parts_new(&o->setup, true, &p->c, err) != REIN_OK ||
        !(p->c.mcp = cli_mcp_join(p->c.reg, &o->setup, err)))
        return p->c.reg && err->code == REIN_ENOMEM ? CLI_EXIT_FAIL : CLI_EXIT_USAGE;
    cli_registry_report(p->c.reg);
    if (o->judge && o->judge_model &&
        !(p->judge = cli_provider_new(&o->setup, o->judge_model, err)))
        return CLI_EXIT_USAGE;
    p->cancel = rein_cancel_new();
    return p->cancel ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

/* With --conversation: the session the loop's turns run in, whose cancel stops the loop. */
static int open_session(const struct loop_opts *o, struct parts *p, struct out *w, rein_error *err)
{
    struct rein_session_opts so = {
        .lease_ms = 30000,
        .title = o->goal,
        .on_event = on_session_event,
        .event_data = w,
        .approve = o->setup.yes ? cli_approve_yes : refuse_destructive,
    };

    if (cli_store_open(o->store_url, NULL, &p->store, err) != REIN_OK ||
        rein_session_open(p->store, o->conversation, &so, &p->session, NULL, err) != REIN_OK)
        return CLI_EXIT_FAIL;
    rein_cancel_unref(p->cancel);
    p->cancel = rein_cancel_ref(rein_session_cancel(p->session));
    return CLI_EXIT_OK;
}

static void teardown(struct parts *p)
{
    rein_session_close(p->session);
    rein_store_free(p->store);
    cli_parts_release(&p->c);
    rein_provider_free(p->judge);
    rein_verify_config_free(p->protocols);
    rein_cancel_unref(p->cancel);
}

static int exit_status(const rein_loop_result *r)
{
    if (rein_loop_result_success(r))
        return CLI_EXIT_OK;
    return rein_loop_result_needs_review(r) ? CLI_EXIT_REVIEW : CLI_EXIT_FAIL;
}

static int run(struct loop_opts *o, struct parts *p)
{
    struct out w = {.o = o};
    struct rein_loop_opts lo = {.protocols = p->protocols,
                                .mode = o->mode,
                                .until = o->has_until ? o->until : NULL,
                                .base = o->base,
                                .term = {.max_iterations = o->max_iterations},
                                .keep_going = o->keep_going,
                                .turn = &o->turn,
                                .judge = o->judge ? (p->judge ? p->judge : p->c.provider) : NULL,
                                .cancel = p->cancel,
                                .on_event = on_loop_event,
                                .event_data = &w};
    struct cli_sigwatch sw;
    rein_loop_result *r = NULL;
    rein_error err = {0};
    int status;

    pthread_mutex_init(&w.mu, NULL);
    rein_error_clear(&err);
    if (o->conversation && open_session(o, p, &w, &err) != CLI_EXIT_OK) {
        cli_print_error(&err);
        pthread_mutex_destroy(&w.mu);
        return CLI_EXIT_FAIL;
    }
    lo.session = p->session;
    lo.cancel = p->cancel;
    o->turn.approve = o->setup.yes ? NULL : refuse_destructive;
    if (o->setup.events) {
        o->turn.on_event = on_agent_event;
        o->turn.event_data = &w;
    }
    cli_sigwatch_start(&sw, p->cancel);

    rein_error_clear(&err);
    if (rein_loop_run(p->c.agent, o->goal, &lo, &r, &err) != REIN_OK) {
        cli_print_error(&err);
        status = err.code == REIN_EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
    } else {
        print_result(o, r, p->c.provider);
        status = exit_status(r);
    }

    cli_sigwatch_stop(&sw);
    pthread_mutex_destroy(&w.mu);
    rein_loop_result_free(r);
    return status;
}

int cmd_loop(int argc, char **argv)
{
    struct loop_opts o;
    struct parts p = {0};
    rein_error err = {0};
    int status;

    memset(&o, 0, sizeof(o));
    status = parse_args(argc, argv, &o);
    if (status) {
        rein_free(o.until_text);
        return status == CLI_ARGS_HELP ? CLI_EXIT_OK : status;
    }
    rein_error_clear(&err);
    status = setup(&o, &p, &err);
    if (status)
        cli_print_error(&err);
    else
        status = run(&o, &p);
    teardown(&p);
    rein_free(o.until_text);
    return status;
}
