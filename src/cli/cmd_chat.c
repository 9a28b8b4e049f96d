/*
 * `rein chat`: one agent turn from the command line (include/rein/agent.h).
 *
 *   rein chat MESSAGE|- [--mode single|auto|propose] [--verification auto|force|off]
 *             [--provider P] [--model M] [--base-url URL] [--config FILE]
 *             [--conversation ID] [--store URL] [--json] [--events]
 *             [--max-tool-calls N] [--max-tokens N] [--timeout DURATION] [--rules-first]
 *             [--approval-timeout-ms DURATION] [--yes] [--skills DIR] [--root DIR]
 *
 * Settings come from the config file (--config or REIN_CONFIG), then the environment, then the
 * flags. With no provider or model configured anywhere, the rules provider answers (simple
 * requests routed straight to a tool; anything else gets a text saying how to configure a
 * provider). --rules-first puts the rules in front of a configured model as a fast path.
 *
 * On a terminal, a status line on stderr shows what the turn is doing (state, tool, elapsed)
 * while it runs; then the answer, and a table of the turn's tool calls with their status and
 * latency. --json prints the result object of POST /agent/chat; --events prints the events as
 * JSON lines while they happen. A destructive call asks for approval on the terminal (y/N,
 * denied after --approval-timeout-ms, 60 s by default; --yes approves without asking; with
 * no terminal the call is denied). Ctrl-C cancels the turn: running tools are stopped and
 * every call still gets its result.
 *
 * --conversation ID keeps the conversation in the store (--store URL, REIN_STORE, or
 * sqlite:./rein.db): this command is the terminal's adapter over the session module
 * (include/rein/session.h), which loads its messages first, locks it while the turn runs, and
 * writes every message, ledger change and event as it happens. Without --conversation the turn
 * runs in a session in memory, the same way.
 *
 * Exit status: 0 when the turn succeeded (rein_agent_result_success: final_answer,
 * success_cap, or proposed in propose mode, and not a turn whose calls all failed or were
 * denied, nor the rules' "could not route"), 1 otherwise, 2 for usage errors and a
 * configuration that cannot work.
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LEASE_MS    30000
#define TICK_MS     100
#define SHOWN_ERROR 60

struct chat_opts {
    const char *message;
    struct rein_agent_turn_opts turn;
    struct cli_setup setup;
    const char *conversation;
    const char *store_url;
};

struct chat {
    const struct chat_opts *o;
    /* the status line on a terminal, or a heartbeat (REIN_LOG=info) when stderr is none */
    bool live, heartbeat;
    struct cli_status line;
    int64_t last_beat_ms;
    pthread_mutex_t mu;
    pthread_mutex_t ask_mu; /* one approval question on the terminal at a time */
    enum rein_agent_state state;
    char tool[REIN_TOOL_NAME_MAX + 1];
    int64_t start_ms;
    bool paused;
    unsigned spin;
    rein_cancel *stop_ticker;
    pthread_t ticker;
    bool has_ticker;
    /* the conversation (include/rein/session.h): in the store with --conversation */
    rein_store *store;
    rein_session *session;
};

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: rein chat [options] MESSAGE\n"
        "       rein chat [options] -          (the message from stdin)\n"
        "       rein chat [options] -- MESSAGE (a message that starts with '-')\n\n"
        "Runs one agent turn: the model calls tools through rein's pipeline until it answers\n"
        "or a limit stops it. Without a configured provider the rules provider answers\n"
        "simple requests (\"echo hello\", \"search 'x'\", \"计算 [1,2,3] 的平均值\").\n\n"
        "  --mode MODE          single (one successful round, then a summary), auto (default),\n"
        "                       propose (check the calls, run none)\n"
        "  --verification V     self-verification: auto (destructive tools, and calls\n"
        "                       without a stated confidence >= 0.8), force (every call), off\n"
        "  --conversation ID    continue (or start) a stored conversation\n"
        "  --store URL          sqlite:PATH or redis://HOST:PORT[/DB] (default REIN_STORE or\n"
        "                       sqlite:./rein.db)\n"
        "  --json               print the result object (as POST /agent/chat returns it)\n"
        "  --events             print the events as JSON lines while the turn runs\n"
        "  --max-tool-calls N, --max-tokens N   limits of the turn\n"
        "  --timeout DURATION   the turn's time limit: milliseconds, or 30s, 2m, ...\n"
        "  --approval-timeout-ms DURATION  how long a destructive call waits for a y/N on the\n"
        "                       terminal (default 60s); then it is not run\n"
        "  --yes                approve destructive calls without asking\n"
        "  --rules-first        try the rules provider before the model\n"
        "  --provider P, --model M, --base-url URL   the model (over --config and REIN_*)\n"
        "  --config FILE        rein's configuration file (default REIN_CONFIG)\n"
        "  --skills DIR, --root DIR   as for 'rein skills'\n\n"
        "Exit status: 0 the turn succeeded, 1 it did not, 2 usage or a configuration that\n"
        "cannot work. A turn succeeds when it stops with final_answer, success_cap or (in\n"
        "propose mode) proposed, no call is left pending, and it is not one of these (the\n"
        "reason is in meta.detail): it made tool calls and none succeeded; every call was\n"
        "denied; the rules provider could not route the request.\n");
}

/* ---- options ---- */

static int chat_option(void *opts, const char *flag, const char *v)
{
    struct chat_opts *o = opts;
    long long n;
    int64_t ms;

    if (!v) {
        o->setup.rules_first = true; /* the one switch of its own */
    } else if (strcmp(flag, "--mode") == 0) {
        if (!rein_agent_mode_parse(v, &o->turn.mode))
            return cli_usage_error("--mode takes single, auto or propose, not '%s'", v);
    } else if (strcmp(flag, "--verification") == 0) {
        if (!rein_agent_verification_parse(v, &o->turn.verification))
            return cli_usage_error("--verification takes auto, force or off, not '%s'", v);
    } else if (strcmp(flag, "--timeout") == 0 || strcmp(flag, "--approval-timeout-ms") == 0) {
        if (!cli_parse_duration(v, 1, INT32_MAX, &ms))
            return cli_duration_error("chat", flag, v);
        *(flag[2] == 't' ? &o->turn.timeout_ms : &o->turn.approval_timeout_ms) = ms;
    } else if (strcmp(flag, "--approval-timeout") == 0) {
        /* The old spelling counted seconds; a unit (30s) reads as --approval-timeout-ms. */
        cli_deprecated("chat", flag, "--approval-timeout-ms (milliseconds, or 30s)");
        if (cli_parse_number(v, 1, INT32_MAX / 1000, &n))
            o->turn.approval_timeout_ms = n * 1000;
        else if (cli_parse_duration(v, 1, INT32_MAX, &ms) &&
                 !strchr("0123456789", v[strlen(v) - 1]))
            o->turn.approval_timeout_ms = ms;
        else
            return cli_duration_error("chat", flag, v);
    } else if (strcmp(flag, "--max-tool-calls") == 0 || strcmp(flag, "--max-tokens") == 0) {
        if (!cli_parse_number(v, 1, INT32_MAX, &n))
            return cli_usage_error("%s needs a positive number, not '%s'", flag, v);
        if (strcmp(flag, "--max-tokens") == 0)
            o->turn.max_tokens = n;
        else
            o->turn.max_tool_calls = (int)n;
    } else if (strcmp(flag, "--conversation") == 0) {
        return cli_conversation_option(v, &o->conversation);
    } else {
        o->store_url = v;
    }
    return CLI_EXIT_OK;
}

static int parse_args(int argc, char **argv, struct chat_opts *o)
{
    static const char *const valued[] = {
        "--mode",    "--verification", "--max-tool-calls",      "--max-tokens",
        "--timeout", "--conversation", "--approval-timeout-ms", "--store",
        NULL};
    static const char *const switches[] = {"--rules-first", NULL};
    static const struct cli_alias aliases[] = {{"--approval-timeout", NULL, false},
                                               {NULL, NULL, false}};
    static const struct cli_args args = {
        .name = "chat",
        .usage = usage,
        .shared = CLI_OPT_MODEL | CLI_OPT_TOOLS | CLI_OPT_JSON | CLI_OPT_EVENTS | CLI_OPT_YES,
        .valued = valued,
        .switches = switches,
        .aliases = aliases,
        .option = chat_option,
        .positional = "message",
        .min_pos = 1,
        .max_pos = 1,
        .stdin_pos = 1,
    };
    int rc = cli_args_parse(&args, argc, argv, o, &o->setup, &o->message, NULL);

    if (rc == CLI_EXIT_OK && !o->message[0])
        return cli_usage_error("chat: the message is empty");
    return rc;
}

/* ---- the status line ---- */

static void clear_line(struct chat *c)
{
    cli_status_clear(&c->line);
}

static void draw_line(struct chat *c)
{
    static const char *const spin[] = {"|", "/", "-", "\\"};
    double secs = (double)(rein_now_ms() - c->start_ms) / 1000.0;
    char text[REIN_TOOL_NAME_MAX + 64];

    if (c->paused || c->state == REIN_AGENT_STATE_IDLE)
        return;
    snprintf(text, sizeof(text), "%s %s%s%s  %.1fs", spin[c->spin++ % 4],
             rein_agent_state_name(c->state), c->tool[0] ? " " : "", c->tool, secs);
    cli_status_draw(&c->line, text);
}

/* stderr is no terminal: with REIN_LOG=info, say every 10 s that the turn still waits. */
static void beat(struct chat *c)
{
    int64_t now = rein_now_ms();

    if (c->state != REIN_AGENT_STATE_IDLE && cli_heartbeat_due(&c->last_beat_ms, now))
        rein_log(REIN_LOG_INFO, "chat", "still %s%s%s after %lld s",
                 rein_agent_state_name(c->state), c->tool[0] ? " " : "", c->tool,
                 (long long)((now - c->start_ms) / 1000));
}

static void *tick(void *arg)
{
    struct chat *c = arg;

    while (!rein_cancel_wait(c->stop_ticker, TICK_MS)) {
        pthread_mutex_lock(&c->mu);
        if (c->live)
            draw_line(c);
        else
            beat(c);
        pthread_mutex_unlock(&c->mu);
    }
    return NULL;
}

/* ---- events ---- */

static void on_event(const struct rein_session_event *sev, void *ud)
{
    struct chat *c = ud;
    const struct rein_agent_event *ev = sev->agent;

    /* start and result are the store's; the terminal shows the agent's events. */
    if (!ev)
        return;
    if (c->o->setup.events) {
        fwrite(sev->json, 1, sev->len, stdout);
        fputc('\n', stdout);
        fflush(stdout);
    }
    if (ev->type != REIN_AGENT_EV_STATUS)
        return;
    pthread_mutex_lock(&c->mu);
    c->state = ev->state;
    snprintf(c->tool, sizeof(c->tool), "%s", ev->tool ? ev->tool : "");
    if (c->live) {
        if (ev->state == REIN_AGENT_STATE_IDLE)
            clear_line(c);
        else
            draw_line(c);
    }
    pthread_mutex_unlock(&c->mu);
}

/* ---- approvals on the terminal ---- */

/* Reads y/N from the terminal until the deadline or a cancel. */
static rein_err ask_terminal(int fd, const struct rein_agent_approval *req, bool *approved)
{
    int64_t end = rein_now_ms() + req->timeout_ms;
    char line[64];
    size_t n = 0;

    for (;;) {
        struct pollfd p[2] = {{fd, POLLIN, 0}, {rein_cancel_fd(req->cancel), POLLIN, 0}};
        int64_t left = end - rein_now_ms();
        ssize_t got;
        if (left <= 0)
            return REIN_ETIMEDOUT;
        if (poll(p, req->cancel ? 2 : 1, (int)left) < 0 && errno != EINTR)
            return REIN_EIO;
        if (req->cancel && (p[1].revents & POLLIN))
            return REIN_ECANCELED;
        if (!(p[0].revents & (POLLIN | POLLHUP)))
            continue;
        got = read(fd, line + n, sizeof(line) - 1 - n);
        if (got <= 0)
            return REIN_EIO;
        n += (size_t)got;
        line[n] = '\0';
        if (strchr(line, '\n') || n == sizeof(line) - 1)
            break;
    }
    *approved = line[0] == 'y' || line[0] == 'Y';
    return REIN_OK;
}

static rein_err approve_on_terminal(void *ud, const struct rein_agent_approval *req, bool *approved,
                                    rein_error *err)
{
    struct chat *c = ud;
    int fd = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
    char *args;
    rein_err rc;

    *approved = false;
    if (fd < 0)
        return rein_error_set(err, REIN_EDENIED,
                              "there is no terminal to ask for approval (--yes allows "
                              "destructive tools without asking)");
    pthread_mutex_lock(&c->ask_mu);
    pthread_mutex_lock(&c->mu);
    c->paused = true;
    clear_line(c);
    pthread_mutex_unlock(&c->mu);
    args = rein_json_dumps(req->args);
    dprintf(fd, "rein: the model wants to run %s %s\nAllow it? [y/N] (%lld s) ", req->tool,
            args ? args : "", (long long)((req->timeout_ms + 999) / 1000));
    rein_free(args);
    rc = ask_terminal(fd, req, approved);
    if (rc == REIN_ETIMEDOUT)
        dprintf(fd, "\nno answer: not run\n");
    else if (rc == REIN_ECANCELED)
        dprintf(fd, "\ncancelled\n");
    close(fd);
    pthread_mutex_lock(&c->mu);
    c->paused = false;
    pthread_mutex_unlock(&c->mu);
    pthread_mutex_unlock(&c->ask_mu);
    return rc;
}

/* ---- the conversation ---- */

/*
 * Opens the session the turn runs in: the stored conversation of --conversation (locked while
 * the turn runs, its messages loaded, everything written as it happens), or one in memory.
 */
static int open_session(struct chat *c, const rein_registry *reg, rein_error *err)
{
    struct rein_session_opts so = {
        .reg = reg,
        .lease_ms = LEASE_MS,
        .title = c->o->message,
        .on_event = on_event,
        .event_data = c,
        .approve = c->o->setup.yes ? cli_approve_yes : approve_on_terminal,
        .approval_data = c,
    };
    rein_err rc;

    if (c->o->conversation) {
        rc = cli_store_open(c->o->store_url, NULL, &c->store, err);
        if (rc)
            return rc;
    }
    return rein_session_open(c->store, c->o->conversation, &so, &c->session, NULL, err);
}

/* ---- output ---- */

static void print_table(const rein_agent_result *r)
{
    json_t *calls = rein_agent_result_tool_calls_json(r), *c;
    int64_t tokens;
    size_t i;

    if (json_array_size(calls) > 0) {
        printf("\n  %-3s %-18s %-9s %8s\n", "#", "TOOL", "STATUS", "LATENCY");
        json_array_foreach(calls, i, c)
        {
            const json_t *res = json_object_get(c, "result");
            const char *msg =
                json_string_value(json_object_get(json_object_get(res, "error"), "message"));
            printf("  %-3zu %-18.18s %-9s %5lld ms", i + 1,
                   json_string_value(json_object_get(c, "tool")),
                   json_string_value(json_object_get(c, "status")),
                   (long long)json_integer_value(json_object_get(c, "latency_ms")));
            if (msg)
                printf("  %.*s%s", SHOWN_ERROR, msg, strlen(msg) > SHOWN_ERROR ? "…" : "");
            putchar('\n');
        }
    }
    json_decref(calls);
    tokens = rein_agent_result_input_tokens(r) + rein_agent_result_output_tokens(r);
    printf("\n(%s · %d model call%s · %lld tokens · %.1f s)\n",
           rein_agent_stop_name(rein_agent_result_stop(r)), rein_agent_result_model_calls(r),
           rein_agent_result_model_calls(r) == 1 ? "" : "s", (long long)tokens,
           (double)rein_agent_result_latency_ms(r) / 1000.0);
}

/* Claims of the answer that no call of the turn shows, on stderr (include/rein/claims.h). */
static void print_claims(const rein_agent_result *r)
{
    const json_t *claims = rein_agent_result_claims(r), *c;
    size_t i;

    json_array_foreach(claims, i, c)
    {
        fprintf(stderr, "rein: the answer says \"%s\", but no call shows it: %s\n",
                json_string_value(json_object_get(c, "text")),
                json_string_value(json_object_get(c, "evidence")));
    }
}

static void print_result(const struct chat_opts *o, const rein_agent_result *r, bool tty)
{
    if (o->setup.json) {
        json_t *j = rein_agent_result_json(r);
        cli_print_json(j);
        json_decref(j);
        return;
    }
    if (o->setup.events)
        return; /* the final event carried the answer */
    puts(rein_agent_result_text(r));
    print_claims(r);
    if (tty)
        print_table(r);
    else if (!rein_agent_result_success(r))
        fprintf(stderr, "rein: the turn did not succeed (%s)%s%s\n",
                rein_agent_stop_name(rein_agent_result_stop(r)),
                rein_agent_result_detail(r)[0] ? ": " : "", rein_agent_result_detail(r));
}

/* ---- the command ---- */

static int run_turn(struct chat *c, rein_agent *a)
{
    const struct chat_opts *o = c->o;
    struct cli_sigwatch w;
    rein_agent_result *r = NULL;
    bool tty = isatty(STDOUT_FILENO) && !o->setup.json && !o->setup.events;
    rein_error err = {0};
    int status = CLI_EXIT_FAIL;

    /* --events is progress itself; --json writes stdout only, so stderr still shows it. */
    c->line.mode = o->setup.events ? CLI_TERM_NONE : cli_term_of(STDERR_FILENO);
    c->live = c->line.mode != CLI_TERM_NONE;
    c->heartbeat = !isatty(STDERR_FILENO) && rein_log_enabled(REIN_LOG_INFO);
    c->start_ms = c->last_beat_ms = rein_now_ms();
    if ((c->live || c->heartbeat) && (c->stop_ticker = rein_cancel_new()) != NULL)
        c->has_ticker = pthread_create(&c->ticker, NULL, tick, c) == 0;
    /* Ctrl-C stops the turn; so do a cancel through the store and a lost lock. */
    cli_sigwatch_start(&w, rein_session_cancel(c->session));

    rein_error_clear(&err);
    if (rein_session_run(c->session, a, o->message, &o->turn, &r, &err) != REIN_OK) {
        cli_print_error(&err);
    } else {
        status = rein_agent_result_success(r) ? CLI_EXIT_OK : CLI_EXIT_FAIL;
    }

    cli_sigwatch_stop(&w);
    if (c->has_ticker) {
        rein_cancel_trigger(c->stop_ticker, "done");
        pthread_join(c->ticker, NULL);
    }
    pthread_mutex_lock(&c->mu);
    clear_line(c);
    pthread_mutex_unlock(&c->mu);
    if (r)
        print_result(o, r, tty);
    rein_agent_result_free(r);
    return status;
}

int cmd_chat_agent(int argc, char **argv)
{
    struct chat_opts o;
    struct chat c;
    struct cli_parts p = {0};
    rein_error err = {0};
    int status;

    memset(&o, 0, sizeof(o));
    memset(&c, 0, sizeof(c));
    status = parse_args(argc, argv, &o);
    if (status)
        return status == CLI_ARGS_HELP ? CLI_EXIT_OK : status;
    c.o = &o;
    pthread_mutex_init(&c.mu, NULL);
    pthread_mutex_init(&c.ask_mu, NULL);
    rein_error_clear(&err);
    status = CLI_EXIT_FAIL;
    if (cli_parts_new(&o.setup, true, &p, &err) != REIN_OK ||
        !(p.mcp = cli_mcp_join(p.reg, &o.setup, &err))) {
        cli_print_error(&err);
        if ((!p.provider || p.agent) && err.code == REIN_EINVAL)
            status = CLI_EXIT_USAGE; /* a bad provider or MCP configuration */
        goto out;
    }
    if (open_session(&c, p.reg, &err) != REIN_OK) {
        cli_print_error(&err);
        if (err.code == REIN_EINVAL) /* a store URL rein does not know */
            status = CLI_EXIT_USAGE;
        goto out;
    }
    status = run_turn(&c, p.agent);
out:
    rein_cancel_unref(c.stop_ticker);
    rein_session_close(c.session);
    rein_store_free(c.store);
    cli_parts_release(&p);
    pthread_mutex_destroy(&c.mu);
    pthread_mutex_destroy(&c.ask_mu);
    return status;
}
