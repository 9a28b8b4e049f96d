/*
 * `rein serve`: opens the store, starts the HTTP server with the store routes, prints where to
 * reach it, and runs until SIGINT or SIGTERM. The signals are blocked in every thread and
 * taken with sigwait() here, so the library never sees them; on one, the server stops
 * accepting, lets running requests finish for the grace period, cancels the rest and exits 0.
 */
#include "cli.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

static void serve_usage(FILE *out)
{
    fprintf(out,
            "usage: rein serve [--host 127.0.0.1] [--port 8080] [--store URL] [--threads N]\n"
            "                  [--body-limit BYTES] [--grace-ms MS]\n\n"
            "Serves the rein HTTP API. --store is sqlite:PATH (default sqlite:./rein.db) or\n"
            "redis://HOST:PORT[/DB]. With REIN_API_KEYS=key1,key2 set, every route but /healthz\n"
            "needs Authorization: Bearer <key>. SIGINT/SIGTERM stop it gracefully.\n");
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
    long body_limit;
    long grace_ms;
};

static int parse_args(int argc, char **argv, struct serve_opts *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (cli_is_flag(a, "-h", "--help")) {
            serve_usage(stdout);
            return -1;
        }
        if (!v)
            return cli_usage_error("%s needs a value (see rein serve --help)", a);
        i++;
        if (strcmp(a, "--host") == 0) {
            o->host = v;
        } else if (strcmp(a, "--store") == 0) {
            o->store_url = v;
        } else if (strcmp(a, "--port") == 0) {
            if (!parse_long(v, 0, 65535, &o->port))
                return cli_usage_error("--port must be 0-65535");
        } else if (strcmp(a, "--threads") == 0) {
            if (!parse_long(v, 1, 1024, &o->threads))
                return cli_usage_error("--threads must be 1-1024");
        } else if (strcmp(a, "--body-limit") == 0) {
            if (!parse_long(v, 1024, 1L << 30, &o->body_limit))
                return cli_usage_error("--body-limit must be 1024 bytes to 1 GiB");
        } else if (strcmp(a, "--grace-ms") == 0) {
            if (!parse_long(v, 0, 3600000, &o->grace_ms))
                return cli_usage_error("--grace-ms must be 0-3600000");
        } else {
            return cli_usage_error("unknown option %s (see rein serve --help)", a);
        }
    }
    return 0;
}

int cmd_serve(int argc, char **argv)
{
    struct serve_opts o = {
        .host = "127.0.0.1", .port = 8080, .threads = 8, .body_limit = 1 << 20, .grace_ms = 10000};
    rein_store *store = NULL;
    rein_server *srv = NULL;
    struct cli_mcp *mcp = NULL;
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

    if (rein_store_open(o.store_url, NULL, &store, &err) != REIN_OK) {
        cli_print_error(&err);
        return CLI_EXIT_USAGE;
    }
    srv = rein_server_new(&err);
    if (!srv || rein_server_set_host(srv, o.host) != REIN_OK) {
        if (srv)
            rein_error_set(&err, REIN_EINVAL, "--host %s is not usable", o.host);
        goto fail;
    }
    rein_server_set_port(srv, (int)o.port);
    rein_server_set_threads(srv, (unsigned)o.threads);
    rein_server_set_body_limit(srv, (size_t)o.body_limit);
    if (rein_server_set_api_keys(srv, getenv("REIN_API_KEYS")) != REIN_OK) {
        rein_error_set(&err, REIN_ENOMEM, "out of memory");
        goto fail;
    }
    if (rein_server_add_store_routes(srv, store, &err) != REIN_OK ||
        rein_server_add_web_routes(srv, &err) != REIN_OK)
        goto fail;
    mcp = cli_mcp_attach(srv, &err);
    if (!mcp || rein_server_start(srv, &err) != REIN_OK)
        goto fail;
    printf("rein %s listening on http://%s%s%s:%d (store %s)\n", rein_version(),
           strchr(o.host, ':') ? "[" : "", o.host, strchr(o.host, ':') ? "]" : "",
           rein_server_port(srv), rein_store_url(store));
    fflush(stdout);

    sigwait(&sigs, &sig);
    fprintf(stderr, "rein: %s received, stopping (grace %ld ms)\n",
            sig == SIGINT ? "SIGINT" : "SIGTERM", o.grace_ms);
    rein_server_stop(srv, o.grace_ms);
    rein_server_free(srv);
    cli_mcp_detach(mcp);
    rein_store_free(store);
    return CLI_EXIT_OK;
fail:
    cli_print_error(&err);
    rein_server_free(srv);
    cli_mcp_detach(mcp);
    rein_store_free(store);
    return CLI_EXIT_FAIL;
}
