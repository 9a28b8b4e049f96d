/*
 * `rein chat`: one agent turn from the command line (include/rein/agent.h).
 *
 *   rein chat MESSAGE [--mode single|auto|propose] [--verification auto|force|off]
 *             [--provider P] [--model M] [--base-url URL] [--config FILE]
 *             [--conversation ID] [--store URL] [--json] [--events]
 *             [--max-tool-calls N] [--max-tokens N] [--timeout MS] [--rules-first] [--yes]
 *             [--skills DIR] [--root DIR]
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
 * denied after --approval-timeout seconds, 60 by default; --yes approves without asking; with
 * no terminal the call is denied). Ctrl-C cancels the turn: running tools are stopped and
 * every call still gets its result.
 *
 * --conversation ID keeps the conversation in the store (--store URL, REIN_STORE, or
 * sqlite:./rein.db): its messages are loaded first, the conversation is locked while the turn
 * runs, and every message, ledger change and event is written as it happens.
 *
 * Exit status: 0 when the turn succeeded (final_answer, success_cap, or proposed in propose
 * mode), 1 otherwise, 2 for usage errors and a configuration that cannot work.
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
    /* the status line */
    bool live;
    pthread_mutex_t mu;
    pthread_mutex_t ask_mu; /* one approval question on the terminal at a time */
    enum rein_agent_state state;
    char tool[REIN_TOOL_NAME_MAX + 1];
    int64_t start_ms;
    bool shown, paused;
    unsigned spin;
    rein_cancel *stop_ticker;
    pthread_t ticker;
    bool has_ticker;
    /* the store */
    rein_store *store;
    rein_store_lease *lease;
    char trace_id[REIN_TRACE_ID_LEN + 1];
};

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: rein chat MESSAGE [--mode single|auto|propose] [--verification auto|force|off]\n"
        "                 [--provider P] [--model M] [--base-url URL] [--config FILE]\n"
        "                 [--conversation ID] [--store URL] [--json] [--events]\n"
        "                 [--max-tool-calls N] [--max-tokens N] [--timeout MS]\n"
        "                 [--approval-timeout S] [--rules-first] [--yes]\n"
        "                 [--skills DIR] [--root DIR]\n\n"
        "Runs one agent turn: the model calls tools through rein's pipeline until it answers\n"
        "or a limit stops it. Without a configured provider the rules provider answers\n"
        "simple requests (\"echo hello\", \"search 'x'\", \"计算 [1,2,3] 的平均值\").\n\n"
        "  --mode            single (one successful round, then a summary), auto (default),\n"
        "                    propose (check the calls, run none)\n"
        "  --verification    self-verification: auto (destructive tools, low confidence),\n"
        "                    force (every call), off\n"
        "  --conversation    continue (or start) a stored conversation; --store picks the\n"
        "                    store (default REIN_STORE or sqlite:./rein.db)\n"
        "  --json            print the result object (as POST /agent/chat returns it)\n"
        "  --events          print the events as JSON lines while the turn runs\n"
        "  --rules-first     try the rules provider before the model\n"
        "  --yes             approve destructive calls without asking\n"
        "  --skills, --root  as for 'rein skills'\n"
        "Exit status: 0 success (final_answer, success_cap, proposed), 1 otherwise, 2 usage.\n");
}

/* ---- options ---- */

static int chat_option(void *opts, const char *flag, const char *v)
{
    struct chat_opts *o = opts;
    long long n;

    if (!v) {
        o->setup.rules_first = true; /* the one switch of its own */
    } else if (strcmp(flag, "--mode") == 0) {
        if (!rein_agent_mode_parse(v, &o->turn.mode))
            return cli_usage_error("--mode takes single, auto or propose, not '%s'", v);
    } else if (strcmp(flag, "--verification") == 0) {
        if (!rein_agent_verification_parse(v, &o->turn.verification))
            return cli_usage_error("--verification takes auto, force or off, not '%s'", v);
    } else if (strcmp(flag, "--max-tool-calls") == 0 || strcmp(flag, "--max-tokens") == 0 ||
               strcmp(flag, "--timeout") == 0 || strcmp(flag, "--approval-timeout") == 0) {
        if (!cli_parse_number(v, 1, INT32_MAX, &n))
            return cli_usage_error("%s needs a positive number, not '%s'", flag, v);
        if (flag[2] == 't')
            o->turn.timeout_ms = n;
        else if (flag[2] == 'a')
            o->turn.approval_timeout_ms = n * 1000;
        else if (strcmp(flag, "--max-tokens") == 0)
            o->turn.max_tokens = n;
        else
            o->turn.max_tool_calls = (int)n;
    } else if (strcmp(flag, "--config") == 0) {
        o->setup.config = v;
    } else if (strcmp(flag, "--conversation") == 0) {
        if (!rein_store_id_is_valid(v))
            return cli_usage_error("'%s' is not a valid conversation id ([A-Za-z0-9_.-], at "
                                   "most 64 characters)",
                                   v);
        o->conversation = v;
    } else {
        o->store_url = v;
    }
    return CLI_EXIT_OK;
}

static int parse_args(int argc, char **argv, struct chat_opts *o)
{
    static const char *const valued[] = {
        "--mode",   "--verification", "--max-tool-calls",   "--max-tokens", "--timeout",
        "--config", "--conversation", "--approval-timeout", "--store",      NULL};
    static const char *const switches[] = {"--json", "--events", "--yes", "--rules-first", NULL};
    static const struct cli_args args = {"chat",      usage,     valued, switches,
                                         chat_option, "message", true};

    return cli_args_parse(&args, argc, argv, o, &o->setup, &o->message);
}

/* ---- the status line ---- */

static void clear_line(struct chat *c)
{
    if (c->shown) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
        c->shown = false;
    }
}

static void draw_line(struct chat *c)
{
    static const char *const spin[] = {"|", "/", "-", "\\"};
    double secs = (double)(rein_now_ms() - c->start_ms) / 1000.0;

    if (c->paused || c->state == REIN_AGENT_STATE_IDLE)
        return;
    fprintf(stderr, "\r\033[K%s %s%s%s  %.1fs", spin[c->spin++ % 4],
            rein_agent_state_name(c->state), c->tool[0] ? " " : "", c->tool, secs);
    fflush(stderr);
    c->shown = true;
}

static void *tick(void *arg)
{
    struct chat *c = arg;

    while (!rein_cancel_wait(c->stop_ticker, TICK_MS)) {
        pthread_mutex_lock(&c->mu);
        draw_line(c);
        pthread_mutex_unlock(&c->mu);
    }
    return NULL;
}

/* ---- events ---- */

static void on_event(const struct rein_agent_event *ev, void *ud)
{
    struct chat *c = ud;
    struct rein_buf b;

    rein_buf_init(&b, 0);
    if ((c->o->setup.events || c->store) && rein_agent_event_write(ev, &b) == REIN_OK) {
        if (c->o->setup.events) {
            fwrite(b.ptr, 1, b.len, stdout);
            fputc('\n', stdout);
            fflush(stdout);
        }
        if (c->store) {
            struct rein_store_event se = {
                .conv_id = c->o->conversation,
                .trace_id = c->trace_id,
                .type = rein_agent_event_type_name(ev->type),
                .payload = b.ptr,
            };
            rein_error err;
            if (rein_store_event_add(c->store, &se, &err) != REIN_OK)
                rein_log(REIN_LOG_WARN, "chat", "event not stored: %s", err.msg);
        }
    }
    rein_buf_release(&b);
    if (ev->type != REIN_AGENT_EV_STATUS)
        return;
    if (c->lease) {
        rein_error err;
        if (rein_store_lease_set_state(c->lease, rein_agent_state_name(ev->state), ev->tool,
                                       &err) != REIN_OK)
            rein_log(REIN_LOG_WARN, "chat", "lock state not updated: %s", err.msg);
    }
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

/* ---- the store ---- */

static int load_message(const struct rein_store_message *m, void *ud)
{
    json_t *msg = rein_json_parse(m->json, m->len, 0, NULL);
    int rc = msg ? rein_history_append(ud, msg, NULL) : REIN_EPARSE;

    json_decref(msg);
    return rc;
}

static rein_err save_message(void *ud, size_t position, const json_t *msg, rein_error *err)
{
    struct chat *c = ud;
    char *text = rein_json_dumps(msg);
    rein_err rc;

    (void)position;
    if (!text)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    rc = rein_store_message_append(c->store, c->o->conversation, text, strlen(text), c->trace_id,
                                   NULL, err);
    rein_free(text);
    return rc;
}

static rein_err save_ledger(void *ud, const json_t *entry)
{
    struct chat *c = ud;
    const char *status = json_string_value(json_object_get(entry, "status"));
    const json_t *step = json_object_get(entry, "step");
    char *args = rein_json_dumps(json_object_get(entry, "args"));
    char *result = json_is_null(json_object_get(entry, "result"))
                       ? NULL
                       : rein_json_dumps(json_object_get(entry, "result"));
    struct rein_store_ledger_entry e = {
        .call_id = json_string_value(json_object_get(entry, "call_id")),
        .tool = json_string_value(json_object_get(entry, "tool")),
        .name_sent = json_string_value(json_object_get(entry, "sent_name")),
        .args = args ? args : "null",
        .result = result,
        .call_ms = rein_wall_ms(),
        .step = json_is_integer(step) ? (int)json_integer_value(step) : -1,
        .trace_id = c->trace_id,
    };
    rein_error err;
    rein_err rc;

    if (!rein_ledger_status_parse(status, &e.status)) {
        rc = REIN_EINVAL;
    } else if (e.status == REIN_LEDGER_PENDING) {
        rc = rein_store_ledger_put(c->store, c->o->conversation, &e, &err);
    } else {
        rc = rein_store_ledger_update(c->store, c->o->conversation, e.call_id, e.status, result, 0,
                                      &err);
        /* A call refused before it could run is written once, already decided. */
        if (rc == REIN_ENOTFOUND)
            rc = rein_store_ledger_put(c->store, c->o->conversation, &e, &err);
    }
    rein_free(args);
    rein_free(result);
    return rc;
}

static int open_conversation(struct chat *c, rein_history *h, rein_error *err)
{
    struct rein_store_lock_info held;
    rein_err rc;

    rc = cli_store_open(c->o->store_url, &c->store, err);
    if (rc)
        return rc;
    rc = rein_store_lease_acquire(c->store, c->o->conversation, LEASE_MS, "thinking", &c->lease,
                                  &held, err);
    if (rc == REIN_EBUSY)
        return rein_error_set(err, REIN_EBUSY, "conversation %s is busy: a turn is %s%s%s",
                              c->o->conversation, held.state, held.tool[0] ? " " : "", held.tool);
    if (rc)
        return rc;
    if (!rein_store_conv_exists(c->store, c->o->conversation, err)) {
        rc = rein_store_conv_create(c->store, c->o->conversation, NULL, NULL, NULL, err);
        if (rc && rc != REIN_EEXIST)
            return rc;
    }
    rc = rein_store_messages_each(c->store, c->o->conversation, 0, load_message, h, err);
    if (rc && !err->msg[0])
        rein_error_set(err, rc, "conversation %s: a stored message cannot be read",
                       c->o->conversation);
    return rc;
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
            const char *msg = json_string_value(json_object_get(res, "message"));
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
    if (tty)
        print_table(r);
    else if (!rein_agent_result_success(r))
        fprintf(stderr, "rein: the turn stopped: %s%s%s\n",
                rein_agent_stop_name(rein_agent_result_stop(r)),
                rein_agent_result_detail(r)[0] ? ": " : "", rein_agent_result_detail(r));
}

/* ---- the command ---- */

static int run_turn(struct chat *c, rein_agent *a, rein_history *h, rein_cancel *cancel)
{
    const struct chat_opts *o = c->o;
    struct rein_agent_turn_opts turn = o->turn;
    struct rein_agent_persist persist = {save_message, save_ledger, c};
    struct cli_sigwatch w;
    rein_agent_result *r = NULL;
    bool tty = isatty(STDOUT_FILENO) && !o->setup.json && !o->setup.events;
    rein_error err;
    int status = CLI_EXIT_FAIL;

    turn.cancel = cancel;
    turn.on_event = on_event;
    turn.event_data = c;
    turn.approve = o->setup.yes ? cli_approve_yes : approve_on_terminal;
    turn.approval_data = c;
    turn.conversation_id = o->conversation;
    turn.trace_id = c->trace_id;
    if (c->store)
        turn.persist = &persist;
    c->live = isatty(STDERR_FILENO) && !o->setup.events && !o->setup.json;
    c->start_ms = rein_now_ms();
    if (c->live && (c->stop_ticker = rein_cancel_new()) != NULL)
        c->has_ticker = pthread_create(&c->ticker, NULL, tick, c) == 0;
    cli_sigwatch_start(&w, cancel);

    rein_error_clear(&err);
    if (rein_agent_run(a, h, o->message, &turn, &r, &err) != REIN_OK) {
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
    rein_history *h = NULL;
    rein_cancel *cancel = NULL;
    rein_error err;
    int status;

    memset(&o, 0, sizeof(o));
    memset(&c, 0, sizeof(c));
    status = parse_args(argc, argv, &o);
    if (status)
        return status == CLI_ARGS_HELP ? CLI_EXIT_OK : status;
    c.o = &o;
    pthread_mutex_init(&c.mu, NULL);
    pthread_mutex_init(&c.ask_mu, NULL);
    rein_trace_id_new(c.trace_id);
    rein_error_clear(&err);
    status = CLI_EXIT_FAIL;
    if (cli_parts_new(&o.setup, true, &p, &err) != REIN_OK) {
        cli_print_error(&err);
        if (!p.provider && err.code == REIN_EINVAL)
            status = CLI_EXIT_USAGE;
        goto out;
    }
    h = rein_history_new();
    cancel = rein_cancel_new();
    if (!h || !cancel) {
        cli_print_error(&err);
        goto out;
    }
    if (o.conversation) {
        if (open_conversation(&c, h, &err) != REIN_OK) {
            cli_print_error(&err);
            goto out;
        }
        /* A cancel through the store (any instance) or a lost lock stops the turn too. */
        rein_cancel_unref(cancel);
        cancel = rein_cancel_new_child(rein_store_lease_cancel(c.lease));
        if (!cancel)
            goto out;
    }
    status = run_turn(&c, p.agent, h, cancel);
out:
    rein_cancel_unref(c.stop_ticker);
    rein_store_lease_release(c.lease);
    rein_store_free(c.store);
    rein_cancel_unref(cancel);
    rein_history_free(h);
    cli_parts_release(&p);
    pthread_mutex_destroy(&c.mu);
    pthread_mutex_destroy(&c.ask_mu);
    return status;
}
