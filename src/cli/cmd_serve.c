/*
 * `rein serve`: the HTTP server. It opens the store, builds ONE registry (built-in skills,
 * REIN_SKILLS_PATH, --skills folders, the configured MCP servers' tools) shared by the skill
 * host, the agent and /mcp, makes the agent over the configured provider (the rules provider
 * when no model is configured), mounts every route, prints where to reach it, and runs until
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

#define MAX_DIRS  32
#define MAX_FLAGS 16

static void serve_usage(FILE *out)
{
    fprintf(out,
            "usage: rein serve [--host 127.0.0.1] [--port 8080] [--store URL] [--threads N]\n"
            "                  [--io-threads N] [--skills DIR]... [--root DIR]... [--provider P] "
            "[--model M]\n"
            "                  [--base-url URL] [--config FILE] [--rules-first]\n"
            "                  [--body-limit BYTES] [--grace-ms MS] [--lease-ms MS]\n"
            "                  [--approval-timeout-ms MS] [--heartbeat-ms MS]\n\n"
            "Serves the rein HTTP API: the skill host (/skills), the agent (/agent/chat and\n"
            "/agent/conversations), MCP (/mcp), /metrics, /healthz and the chat page (/).\n\n"
            "  --store         sqlite:PATH (default REIN_STORE or sqlite:./rein.db) or\n"
            "                  redis://HOST:PORT[/DB]: several servers sharing one Redis share\n"
            "                  conversations, locks, cancels and approvals\n"
            "  --threads       requests handled at once (a running agent turn holds one)\n"
            "  --io-threads    network threads (default 2)\n"
            "  --skills, --root  external skill folders; folders file_search may read\n"
            "  --provider, --model, --base-url, --config  the model, as for 'rein chat'; with\n"
            "                  none configured the rules provider answers\n"
            "  --rules-first   try the rules provider before the model\n"
            "  --grace-ms      on SIGTERM, how long running turns may finish (default 10000)\n"
            "  --lease-ms      a turn's lock lease (default 30000): a conversation whose server\n"
            "                  died is free again after it\n"
            "  --approval-timeout-ms  how long a destructive call waits for approval (60000)\n"
            "  --heartbeat-ms  SSE heartbeat interval (default 15000)\n\n"
            "With REIN_API_KEYS=key1,key2 set, every route but /healthz needs\n"
            "Authorization: Bearer <key>. SIGINT/SIGTERM stop it gracefully.\n");
}

static bool parse_long(const char *text, long lo, long hi, long *out)
{
    char *end = NULL;
    long v;

    if (!text || !*text)
        return false;
    v = strtol(text, &end, 10);
    if (*end || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

struct serve_opts {
    const char *host;
    long port;
    const char *store_url;
    long threads;
    long io_threads;
    long body_limit;
    long grace_ms;
    long lease_ms;
    long approval_ms;
    long heartbeat_ms;
    const char *config;
    bool rules_first;
    const char *skills[MAX_DIRS];
    size_t nskills;
    const char *roots[MAX_DIRS + 1];
    size_t nroots;
    const char *flags[MAX_FLAGS][2];
    size_t nflags;
};

/* The flags that take a number: name, range, where it goes. */
static int number_flag(struct serve_opts *o, const char *a, const char *v, bool *known)
{
    static const struct {
        const char *name;
        long lo, hi;
        size_t off;
        const char *range;
    } nums[] = {
        {"--port", 0, 65535, offsetof(struct serve_opts, port), "0-65535"},
        {"--threads", 1, 1024, offsetof(struct serve_opts, threads), "1-1024"},
        {"--io-threads", 1, 64, offsetof(struct serve_opts, io_threads), "1-64"},
        {"--body-limit", 1024, 1L << 30, offsetof(struct serve_opts, body_limit),
         "1024 bytes to 1 GiB"},
        {"--grace-ms", 0, 3600000, offsetof(struct serve_opts, grace_ms), "0-3600000"},
        {"--lease-ms", 100, 3600000, offsetof(struct serve_opts, lease_ms), "100-3600000"},
        {"--approval-timeout-ms", 1, 86400000, offsetof(struct serve_opts, approval_ms),
         "1-86400000"},
        {"--heartbeat-ms", 10, 3600000, offsetof(struct serve_opts, heartbeat_ms), "10-3600000"},
    };

    for (size_t k = 0; k < sizeof(nums) / sizeof(nums[0]); k++) {
        if (strcmp(a, nums[k].name) != 0)
            continue;
        *known = true;
        if (!parse_long(v, nums[k].lo, nums[k].hi, (long *)((char *)o + nums[k].off)))
            return cli_usage_error("%s must be %s", a, nums[k].range);
        return CLI_EXIT_OK;
    }
    *known = false;
    return CLI_EXIT_OK;
}

static int value_flag(struct serve_opts *o, const char *a, const char *v)
{
    static const char *const provider_keys[][2] = {
        {"--provider", "provider"}, {"--model", "model"}, {"--base-url", "base_url"}};
    bool known = false;
    int rc = number_flag(o, a, v, &known);

    if (known || rc)
        return rc;
    if (strcmp(a, "--host") == 0) {
        o->host = v;
    } else if (strcmp(a, "--store") == 0) {
        o->store_url = v;
    } else if (strcmp(a, "--config") == 0) {
        o->config = v;
    } else if (strcmp(a, "--skills") == 0 || strcmp(a, "--root") == 0) {
        bool skills = a[2] == 's';
        if ((skills ? o->nskills : o->nroots) >= MAX_DIRS)
            return cli_usage_error("too many %s folders", a);
        if (skills)
            o->skills[o->nskills++] = v;
        else
            o->roots[o->nroots++] = v;
    } else {
        for (size_t k = 0; k < sizeof(provider_keys) / sizeof(provider_keys[0]); k++) {
            if (strcmp(a, provider_keys[k][0]) == 0) {
                if (o->nflags >= MAX_FLAGS)
                    return cli_usage_error("too many provider settings");
                o->flags[o->nflags][0] = provider_keys[k][1];
                o->flags[o->nflags++][1] = v;
                return CLI_EXIT_OK;
            }
        }
        return cli_usage_error("unknown option %s (see rein serve --help)", a);
    }
    return CLI_EXIT_OK;
}

static int parse_args(int argc, char **argv, struct serve_opts *o)
{
    o->config = getenv("REIN_CONFIG");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int rc;
        if (cli_is_flag(a, "-h", "--help")) {
            serve_usage(stdout);
            return -1;
        }
        if (strcmp(a, "--rules-first") == 0) {
            o->rules_first = true;
            continue;
        }
        if (i + 1 >= argc)
            return cli_usage_error("%s needs a value (see rein serve --help)", a);
        rc = value_flag(o, a, argv[++i]);
        if (rc)
            return rc;
    }
    return 0;
}

/* Everything `rein serve` builds, freed in reverse order. */
struct serve {
    rein_store *store;
    rein_registry *reg;
    rein_provider *provider, *rules;
    rein_agent *agent;
    rein_agent_api *api;
    rein_server *srv;
    struct cli_mcp *mcp;
};

static void serve_free(struct serve *s)
{
    rein_server_free(s->srv);
    rein_agent_api_free(s->api);
    cli_mcp_detach(s->mcp);
    rein_agent_free(s->agent);
    rein_provider_free(s->rules);
    rein_provider_free(s->provider);
    rein_registry_free(s->reg);
    rein_store_free(s->store);
}

/* The agent over the registry and the configured provider. */
static rein_err make_agent(struct serve *s, const struct serve_opts *o, rein_error *err)
{
    s->provider = cli_provider_new(o->config, (const char *const(*)[2])o->flags, o->nflags, err);
    if (!s->provider)
        return err->code ? err->code : REIN_ENOMEM;
    s->agent = rein_agent_new(s->provider, s->reg, err);
    if (!s->agent)
        return err->code ? err->code : REIN_ENOMEM;
    rein_agent_set_metrics(s->agent, rein_metrics_global());
    if (o->rules_first && strcmp(rein_provider_name(s->provider), "rules") != 0) {
        s->rules = cli_rules_new(err);
        if (!s->rules)
            return err->code ? err->code : REIN_ENOMEM;
        rein_agent_set_rules(s->agent, s->rules);
    }
    return REIN_OK;
}

static rein_err make_server(struct serve *s, const struct serve_opts *o, rein_error *err)
{
    struct rein_agent_api_opts ao = {
        .lease_ms = o->lease_ms,
        .approval_timeout_ms = o->approval_ms,
        .provider_name = rein_provider_name(s->provider),
    };

    s->srv = rein_server_new(err);
    if (!s->srv)
        return REIN_ENOMEM;
    if (rein_server_set_host(s->srv, o->host) != REIN_OK)
        return rein_error_set(err, REIN_EINVAL, "--host %s is not usable", o->host);
    rein_server_set_port(s->srv, (int)o->port);
    rein_server_set_threads(s->srv, (unsigned)o->threads);
    rein_server_set_io_threads(s->srv, (unsigned)o->io_threads);
    rein_server_set_body_limit(s->srv, (size_t)o->body_limit);
    rein_server_set_heartbeat_ms(s->srv, o->heartbeat_ms);
    if (rein_server_set_api_keys(s->srv, getenv("REIN_API_KEYS")) != REIN_OK)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    s->api = rein_agent_api_new(s->agent, s->reg, s->store, &ao, err);
    if (!s->api || rein_server_add_store_routes(s->srv, s->store, err) != REIN_OK ||
        rein_server_add_skill_routes(s->srv, s->reg, NULL, err) != REIN_OK ||
        rein_server_add_agent_routes(s->srv, s->api, err) != REIN_OK ||
        rein_server_add_web_routes(s->srv, err) != REIN_OK)
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
                           .threads = 8,
                           .io_threads = 2,
                           .body_limit = 1 << 20,
                           .grace_ms = 10000,
                           .lease_ms = 30000,
                           .approval_ms = 60000,
                           .heartbeat_ms = 15000};
    struct serve s;
    rein_error err;
    sigset_t sigs;
    int sig = 0, rc = parse_args(argc, argv, &o);

    if (rc != 0)
        return rc < 0 ? CLI_EXIT_OK : rc;
    if (!o.store_url)
        o.store_url = getenv("REIN_STORE") ? getenv("REIN_STORE") : REIN_STORE_DEFAULT_URL;
    /* Block the stop signals before any thread starts, so only sigwait() below sees them. */
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    raise_fd_limit();
    memset(&s, 0, sizeof(s));
    rein_error_clear(&err);

    if (rein_store_open(o.store_url, NULL, &s.store, &err) != REIN_OK) {
        cli_print_error(&err);
        return CLI_EXIT_USAGE;
    }
    s.reg = cli_registry_new(o.skills, o.nskills, o.nroots ? o.roots : NULL, &err);
    if (!s.reg || make_agent(&s, &o, &err) != REIN_OK || make_server(&s, &o, &err) != REIN_OK)
        goto fail;
    /* The MCP servers' tools join the one registry before anything serves it. */
    s.mcp = cli_mcp_attach(s.srv, s.reg, &err);
    if (!s.mcp || rein_server_start(s.srv, &err) != REIN_OK)
        goto fail;
    printf("rein %s listening on http://%s%s%s:%d (store %s, provider %s, %zu tools)\n",
           rein_version(), strchr(o.host, ':') ? "[" : "", o.host, strchr(o.host, ':') ? "]" : "",
           rein_server_port(s.srv), rein_store_url(s.store), rein_provider_name(s.provider),
           rein_registry_count(s.reg));
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
    return CLI_EXIT_FAIL;
}
