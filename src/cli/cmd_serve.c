/*
 * `rein serve`: the HTTP server. It opens the store, builds ONE registry (built-in skills,
 * REIN_SKILLS_PATH, --skills folders, the configured MCP servers' tools) shared by the skill
 * host, the agent, /mcp and the gateway's server-side tools, makes the agent over the
 * configured provider (the rules provider when no model is configured) and the gateway in
 * front of the same provider, mounts every route, prints where to reach it, and runs until
 * SIGINT or SIGTERM. The signals are blocked in every thread and taken with sigwait() here,
 * so the library never sees them; on one, the server stops accepting, lets running requests
 * (agent turns among them) finish for the grace period, cancels the rest (their conversations
 * are left "interrupted", every call with a result) and exits 0.
 */
#include "cli.h"

#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static void serve_usage(FILE *out)
{
    fprintf(out,
            "usage: rein serve [--host 127.0.0.1] [--port 8080] [--store URL] [options]\n\n"
            "Serves the rein HTTP API: the skill host (/skills), the agent (/agent/chat and\n"
            "/agent/conversations), MCP (/mcp), the gateway (/v1/chat/completions,\n"
            "/v1/responses and /v1/responses/{id}, /v1/messages, /v1/models, and Gemini's\n"
            "/v1beta/models/MODEL:generateContent and :streamGenerateContent; the token\n"
            "counts /v1/messages/count_tokens, /v1/responses/input_tokens and\n"
            "/v1beta/models/MODEL:countTokens, by the upstream's own count), /metrics,\n"
            "/healthz and the chat page (/).\n\n"
            "  --host HOST, --port N   where to listen (port 0: any free port)\n"
            "  --store URL             sqlite:PATH (default REIN_STORE or sqlite:./rein.db) or\n"
            "                          redis://HOST:PORT[/DB]: several servers sharing one Redis\n"
            "                          share conversations, locks, cancels and approvals\n"
            "  --threads N             requests handled at once (default 32; a running agent turn\n"
            "                          holds one while it waits for the model and the disk)\n"
            "  --wait-threads N        gateway requests handled at once (default 1024; each holds\n"
            "                          a thread, started when needed, while the upstream answers)\n"
            "  --io-threads N          network threads (default 2)\n"
            "  --skills DIR, --root DIR   external skill folders; folders file_search may read\n"
            "  --provider P, --model M, --base-url URL   the model, as for 'rein chat'; with\n"
            "                          none configured the rules provider answers\n"
            "  --config FILE           rein's configuration file (default REIN_CONFIG)\n"
            "  --rules-first           try the rules provider before the model\n"
            "  --body-limit BYTES      largest request body (default 1 MiB)\n"
            "  --max-client-connections N  connections one client address may hold (256)\n"
            "  --body-memory BYTES     bytes all request bodies being received may hold\n"
            "                          together; past it requests get 503 (default 64 MiB)\n"
            "  --metrics-public        serve /metrics without an API key\n"
            "Durations are milliseconds, or a number with a unit (30s, 2m):\n"
            "  --grace-ms D            on SIGTERM, how long running turns may finish (10s)\n"
            "  --lease-ms D            a turn's lock lease (30s): a conversation whose server\n"
            "                          died is free again after it\n"
            "  --approval-timeout-ms D how long a destructive call waits for approval (60s)\n"
            "  --heartbeat-ms D        SSE heartbeat interval (15s)\n"
            "  --header-timeout-ms D   a request's headers must arrive within D (from accept,\n"
            "                          or the previous answer on a kept-alive connection), else\n"
            "                          the connection is closed (10s)\n"
            "  --body-timeout-ms D     a request's body must arrive within D after its headers\n"
            "                          (30s)\n"
            "The gateway (point an OpenAI client's base URL at http://HOST:PORT/v1, an\n"
            "Anthropic client's at http://HOST:PORT; every tool call is checked against the\n"
            "request's own tools):\n"
            "  --gateway-on-invalid reask|pass|error  what a reply with an invalid call gets:\n"
            "                          reask (default: the model is asked again), pass (the\n"
            "                          reply, problems in its \"rein\" member) or error (422); a\n"
            "                          request's x-rein-on-invalid header wins\n"
            "  --gateway-max-reasks N  re-asks per request (0-10, default 2; x-rein-max-reasks)\n"
            "  --gateway-tools IDS     tools of rein's registry every request may use\n"
            "                          server-side (\"echo,file_search\"; x-rein-tools wins)\n"
            "  --gateway-forward-key   send the client's own key upstream instead of rein's\n"
            "  --gateway-client-model  ask upstream for the model the client names\n"
            "  --gateway-fill-defaults valid calls get their schema's defaults filled in\n"
            "  --gateway-record-all    record every gateway request (each in a new\n"
            "                          conversation); otherwise those with x-rein-conversation\n"
            "  --gateway-keep-bytes BYTES  memory for Responses API answers kept for\n"
            "                          previous_response_id and item_reference (store true;\n"
            "                          default 64 MiB; 0 keeps none), and as much again for the\n"
            "                          events of background streams, to resume them, and for\n"
            "                          the reasoning of calls handed to a client of another\n"
            "                          wire (Claude's thinking, Gemini's thought signatures)\n"
            "  --gateway-keep-ms D     a kept answer unused this long is forgotten (24h)\n"
            "  --gateway-background N  Responses API requests with background true running at\n"
            "                          once, a client half of them (default 16; 0 runs none)\n\n"
            "With REIN_API_KEYS=key1,key2 set, every route but /healthz and the chat page needs\n"
            "Authorization: Bearer <key> or x-api-key: <key> (/metrics too, unless\n"
            "--metrics-public).\n"
            "SIGINT/SIGTERM stop it gracefully.\n"
            "Exit status: 0 stopped by a signal, 1 it could not start or serve, 2 usage or a\n"
            "configuration that cannot work.\n");
}

struct serve_opts {
    const char *host;
    long port;
    const char *store_url;
    long threads;
    long wait_threads;
    long io_threads;
    long body_limit;
    long grace_ms;
    long lease_ms;
    long approval_ms;
    long heartbeat_ms;
    long header_timeout_ms;
    long body_timeout_ms;
    long client_conns;
    long body_memory;
    bool metrics_public;
    struct rein_gateway_opts gw;
    long gw_reasks;
    long gw_keep_bytes;
    long gw_keep_ms;
    long gw_background;
    struct cli_setup setup;
};

/* The flags that take a number: name, range, where it goes. */
static const struct {
    const char *name;
    long lo, hi;
    size_t off;
    const char *range;
    bool duration;
} nums[] = {
    {"--port", 0, 65535, offsetof(struct serve_opts, port), "0-65535", false},
    {"--threads", 1, 1024, offsetof(struct serve_opts, threads), "1-1024", false},
    {"--wait-threads", 1, 65536, offsetof(struct serve_opts, wait_threads), "1-65536", false},
    {"--io-threads", 1, 64, offsetof(struct serve_opts, io_threads), "1-64", false},
    {"--body-limit", 1024, 1L << 30, offsetof(struct serve_opts, body_limit), "1024 bytes to 1 GiB",
     false},
    {"--grace-ms", 0, 3600000, offsetof(struct serve_opts, grace_ms), "0 to 1h", true},
    {"--lease-ms", 100, 3600000, offsetof(struct serve_opts, lease_ms), "100ms to 1h", true},
    {"--approval-timeout-ms", 1, 86400000, offsetof(struct serve_opts, approval_ms), "1ms to 24h",
     true},
    {"--heartbeat-ms", 10, 3600000, offsetof(struct serve_opts, heartbeat_ms), "10ms to 1h", true},
    {"--header-timeout-ms", 100, 3600000, offsetof(struct serve_opts, header_timeout_ms),
     "100ms to 1h", true},
    {"--body-timeout-ms", 100, 3600000, offsetof(struct serve_opts, body_timeout_ms), "100ms to 1h",
     true},
    {"--max-client-connections", 1, 100000, offsetof(struct serve_opts, client_conns), "1-100000",
     false},
    {"--body-memory", 1L << 20, 1L << 36, offsetof(struct serve_opts, body_memory),
     "1 MiB to 64 GiB", false},
    {"--gateway-max-reasks", 0, REIN_GATEWAY_MAX_REASKS, offsetof(struct serve_opts, gw_reasks),
     "0-10", false},
    {"--gateway-keep-bytes", 0, 1L << 36, offsetof(struct serve_opts, gw_keep_bytes),
     "0 (none) to 64 GiB", false},
    {"--gateway-keep-ms", 1000, 30L * 86400000, offsetof(struct serve_opts, gw_keep_ms),
     "1s to 30 days", true},
    {"--gateway-background", 0, 4096, offsetof(struct serve_opts, gw_background),
     "0 (none) to 4096", false},
};

/* The gateway's switches: name, where the flag goes. */
static const struct {
    const char *name;
    size_t off;
} gw_switches[] = {
    {"--gateway-forward-key", offsetof(struct serve_opts, gw.forward_client_key)},
    {"--gateway-client-model", offsetof(struct serve_opts, gw.model_from_client)},
    {"--gateway-fill-defaults", offsetof(struct serve_opts, gw.fill_defaults)},
    {"--gateway-record-all", offsetof(struct serve_opts, gw.record_all)},
};

static int serve_option(void *opts, const char *a, const char *v)
{
    struct serve_opts *o = opts;
    long long n;

    if (!v) {
        for (size_t k = 0; k < sizeof(gw_switches) / sizeof(gw_switches[0]); k++) {
            if (strcmp(a, gw_switches[k].name) == 0) {
                *(bool *)((char *)o + gw_switches[k].off) = true;
                return CLI_EXIT_OK;
            }
        }
        if (strcmp(a, "--metrics-public") == 0)
            o->metrics_public = true;
        else
            o->setup.rules_first = true;
        return CLI_EXIT_OK;
    }
    for (size_t k = 0; k < REIN_ARRAY_SIZE(nums); k++) {
        int64_t ms;
        if (strcmp(a, nums[k].name) != 0)
            continue;
        if (nums[k].duration) {
            if (!cli_parse_duration(v, nums[k].lo, nums[k].hi, &ms))
                return cli_usage_error("serve: %s takes a duration from %s (milliseconds, or "
                                       "with a unit: 30s), not '%s'",
                                       a, nums[k].range, v);
            n = ms;
        } else if (!cli_parse_number(v, nums[k].lo, nums[k].hi, &n)) {
            return cli_usage_error("serve: %s must be %s, not '%s'", a, nums[k].range, v);
        }
        *(long *)((char *)o + nums[k].off) = (long)n;
        return CLI_EXIT_OK;
    }
    if (strcmp(a, "--host") == 0)
        o->host = v;
    else if (strcmp(a, "--gateway-tools") == 0)
        o->gw.tools = v;
    else if (strcmp(a, "--gateway-on-invalid") == 0) {
        if (!rein_gateway_policy_parse(v, &o->gw.on_invalid))
            return cli_usage_error("serve: --gateway-on-invalid must be reask, pass or error, "
                                   "not '%s'",
                                   v);
    } else
        o->store_url = v;
    return CLI_EXIT_OK;
}

static int parse_args(int argc, char **argv, struct serve_opts *o)
{
    static const char *const valued[] = {"--host",
                                         "--store",
                                         "--port",
                                         "--threads",
                                         "--wait-threads",
                                         "--io-threads",
                                         "--body-limit",
                                         "--grace-ms",
                                         "--lease-ms",
                                         "--approval-timeout-ms",
                                         "--heartbeat-ms",
                                         "--header-timeout-ms",
                                         "--body-timeout-ms",
                                         "--max-client-connections",
                                         "--body-memory",
                                         "--gateway-on-invalid",
                                         "--gateway-max-reasks",
                                         "--gateway-tools",
                                         NULL};
    static const char *const switches[] = {"--rules-first",
                                           "--metrics-public",
                                           "--gateway-forward-key",
                                           "--gateway-client-model",
                                           "--gateway-fill-defaults",
                                           "--gateway-record-all",
                                           NULL};
    static const struct cli_args args = {
        .name = "serve",
        .usage = serve_usage,
        .shared = CLI_OPT_MODEL | CLI_OPT_TOOLS,
        .valued = valued,
        .switches = switches,
        .option = serve_option,
    };

    return cli_args_parse(&args, argc, argv, o, &o->setup, NULL, NULL);
}

/* Everything `rein serve` builds, freed in reverse order. */
struct serve {
    rein_store *store;
    struct cli_parts p; /* the provider, the registry, the agent */
    rein_agent_api *api;
    rein_gateway *gw;
    rein_server *srv;
    struct cli_mcp *mcp;
};

static void serve_free(struct serve *s)
{
    rein_server_free(s->srv);
    rein_gateway_free(s->gw);
    rein_agent_api_free(s->api);
    cli_mcp_detach(s->mcp);
    cli_parts_release(&s->p);
    rein_store_free(s->store);
}

static rein_err make_server(struct serve *s, const struct serve_opts *o, rein_error *err)
{
    struct rein_agent_api_opts ao = {
        .lease_ms = o->lease_ms,
        .approval_timeout_ms = o->approval_ms,
        .provider_name = rein_provider_name(s->p.provider),
    };
    rein_err rc;

    s->srv = rein_server_new(err);
    if (!s->srv)
        return REIN_ENOMEM;
    if (rein_server_set_host(s->srv, o->host) != REIN_OK)
        return rein_error_set(err, REIN_EINVAL, "--host %s is not usable", o->host);
    rein_server_set_port(s->srv, (int)o->port);
    rein_server_set_threads(s->srv, (unsigned)o->threads);
    rein_server_set_wait_threads(s->srv, (unsigned)o->wait_threads);
    rein_server_set_io_threads(s->srv, (unsigned)o->io_threads);
    rein_server_set_body_limit(s->srv, (size_t)o->body_limit);
    rein_server_set_heartbeat_ms(s->srv, o->heartbeat_ms);
    rein_server_set_header_timeout_ms(s->srv, o->header_timeout_ms);
    rein_server_set_body_timeout_ms(s->srv, o->body_timeout_ms);
    rein_server_set_client_connections(s->srv, (unsigned)o->client_conns);
    rein_server_set_body_memory(s->srv, (size_t)o->body_memory);
    rein_server_set_metrics_public(s->srv, o->metrics_public);
    rc = rein_server_set_api_keys(s->srv, getenv("REIN_API_KEYS"));
    if (rc == REIN_EINVAL)
        return rein_error_set(err, REIN_EINVAL,
                              "REIN_API_KEYS is set but holds no key (keys are separated by "
                              "commas); unset it to serve without keys");
    if (rc != REIN_OK)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    s->api = rein_agent_api_new(s->p.agent, s->p.reg, s->store, &ao, err);
    if (!s->api || rein_server_add_store_routes(s->srv, s->store, err) != REIN_OK ||
        rein_server_add_skill_routes(s->srv, s->p.reg, NULL, err) != REIN_OK ||
        rein_server_add_agent_routes(s->srv, s->api, err) != REIN_OK ||
        rein_server_add_web_routes(s->srv, err) != REIN_OK)
        return err->code ? err->code : REIN_ENOMEM;
    return REIN_OK;
}

/* The gateway over the same provider, registry and store (after the MCP tools joined). */
static rein_err make_gateway(struct serve *s, struct serve_opts *o, rein_error *err)
{
    o->gw.provider = s->p.provider;
    o->gw.reg = s->p.reg;
    o->gw.store = s->store;
    o->gw.lease_ms = o->lease_ms;
    o->gw.api_keys = getenv("REIN_API_KEYS");
    o->gw.max_reasks = o->gw_reasks < 0 ? 0 : o->gw_reasks == 0 ? -1 : (int)o->gw_reasks;
    o->gw.keep_bytes = o->gw_keep_bytes < 0 ? 0 : o->gw_keep_bytes == 0 ? -1 : o->gw_keep_bytes;
    o->gw.keep_ms = o->gw_keep_ms;
    o->gw.background_max = o->gw_background < 0    ? 0
                           : o->gw_background == 0 ? -1
                                                   : (int)o->gw_background;
    s->gw = rein_gateway_new(&o->gw, err);
    if (!s->gw || rein_gateway_add_routes(s->srv, s->gw, err) != REIN_OK)
        return err->code ? err->code : REIN_ENOMEM;
    return REIN_OK;
}

/* Each connection and each running turn holds descriptors: use the hard limit. */
static void raise_fd_limit(void)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        (void)setrlimit(RLIMIT_NOFILE, &rl);
    }
}

int cmd_serve(int argc, char **argv)
{
    struct serve_opts o = {.host = "127.0.0.1",
                           .port = 8080,
                           .threads = 32,
                           .wait_threads = REIN_SERVER_DEFAULT_WAIT_THREADS,
                           .io_threads = 2,
                           .body_limit = 1 << 20,
                           .grace_ms = 10000,
                           .lease_ms = 30000,
                           .approval_ms = 60000,
                           .heartbeat_ms = 15000,
                           .gw_reasks = -1,
                           .gw_keep_bytes = -1,
                           .gw_background = -1};
    struct rein_store_opts store_opts = {.exclusive = true};
    struct serve s;
    rein_error err = {0};
    sigset_t sigs;
    int sig = 0, rc = parse_args(argc, argv, &o);

    if (rc != 0)
        return rc == CLI_ARGS_HELP ? CLI_EXIT_OK : rc;
    /* Block the stop signals before any thread starts, so only sigwait() below sees them. */
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    raise_fd_limit();
    memset(&s, 0, sizeof(s));
    rein_error_clear(&err);

    if (cli_parts_new(&o.setup, true, &s.p, &err) != REIN_OK) {
        cli_print_error(&err);
        serve_free(&s);
        return err.code == REIN_EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
    }
    rein_error_clear(&err);
    /* A Redis store keeps a connection per worker (up to 64): a turn's store calls are round
     * trips, and with the default 4 the workers queued for a connection (issue 25). */
    store_opts.pool_size = o.threads < 64 ? (unsigned)o.threads : 64;
    /* The server holds a SQLite file alone: no -shm mapping to crash it (store.h). */
    if (cli_store_open(o.store_url, &store_opts, &s.store, &err) != REIN_OK) {
        cli_print_error(&err);
        serve_free(&s);
        return CLI_EXIT_USAGE;
    }
    rein_metrics_observe_agent(s.p.agent, rein_metrics_global());
    /* Each step gets a fresh record: a failure names its own module, never an earlier one. */
    rein_error_clear(&err);
    if (make_server(&s, &o, &err) != REIN_OK)
        goto fail;
    /* The MCP servers' tools join the one registry before anything serves it. */
    rein_error_clear(&err);
    s.mcp = cli_mcp_attach(s.srv, s.p.reg, s.store, &o.setup, &err);
    if (!s.mcp || make_gateway(&s, &o, &err) != REIN_OK)
        goto fail;
    rein_error_clear(&err);
    if (rein_server_start(s.srv, &err) != REIN_OK)
        goto fail;
    printf("rein %s listening on http://%s%s%s:%d (store %s, provider %s, model %s, %zu tools)\n",
           rein_version(), strchr(o.host, ':') ? "[" : "", o.host, strchr(o.host, ':') ? "]" : "",
           rein_server_port(s.srv), rein_store_url(s.store), rein_provider_name(s.p.provider),
           rein_provider_model(s.p.provider), rein_registry_count(s.p.reg));
    fflush(stdout);

    sigwait(&sigs, &sig);
    fprintf(stderr, "rein: %s received, stopping (grace %ld ms)\n",
            sig == SIGINT ? "SIGINT" : "SIGTERM", o.grace_ms);
    rein_server_stop(s.srv, o.grace_ms);
    serve_free(&s);
    return CLI_EXIT_OK;
fail:
    cli_print_error(&err);
    serve_free(&s);
    /* A setting that cannot work (a host that is no address) is a usage error; a port that
     * is taken is a failure to serve. */
    return err.code == REIN_EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
}
