/*
 * rein-model-server: the scripted model server (tests/support/model_server.h) as a process,
 * for tests and benchmarks that run rein as a separate program (`rein chat`, `rein serve`).
 *
 *   rein-model-server [--port N] [--scenario FILE] [--api-key KEY] [--no-validate]
 *                     [--log-limit N]
 *
 * Prints its base URL ("http://127.0.0.1:PORT") on a line of its own on stdout once it
 * listens, then serves until SIGTERM or SIGINT. Scripts can be replaced or extended at run
 * time with POST /__script and the request log read with GET /__requests on the same port.
 */
#include "model_server.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *to)
{
    fprintf(to, "usage: rein-model-server [--port N] [--scenario FILE] [--api-key KEY] "
                "[--no-validate] [--log-limit N]\n"
                "  --port N         listen on 127.0.0.1:N (default 0: a free port)\n"
                "  --scenario FILE  load a scenario (see tests/support/model_server.h)\n"
                "  --api-key KEY    requests must carry this key\n"
                "  --no-validate    serve requests the real services would refuse\n"
                "  --log-limit N    keep at most N requests in the log (benchmarks)\n"
                "Prints the base URL on stdout, then serves until SIGTERM or SIGINT.\n");
}

static bool parse_count(const char *text, long max, long *out)
{
    char *end;
    long v = strtol(text, &end, 10);

    if (!*text || *end || v < 0 || v > max)
        return false;
    *out = v;
    return true;
}

int main(int argc, char **argv)
{
    const char *scenario = NULL, *key = NULL;
    bool validate = true;
    long port = 0, log_limit = 0;
    int sig = 0;
    sigset_t set;
    rein_error err;
    ms_server *s;

    for (int i = 1; i < argc; i++) {
        bool has_value = i + 1 < argc;
        if (strcmp(argv[i], "--port") == 0 && has_value && parse_count(argv[i + 1], 65535, &port)) {
            i++;
        } else if (strcmp(argv[i], "--log-limit") == 0 && has_value &&
                   parse_count(argv[i + 1], 1L << 40, &log_limit)) {
            i++;
        } else if (strcmp(argv[i], "--scenario") == 0 && has_value) {
            scenario = argv[++i];
        } else if (strcmp(argv[i], "--api-key") == 0 && has_value) {
            key = argv[++i];
        } else if (strcmp(argv[i], "--no-validate") == 0) {
            validate = false;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "rein-model-server: bad argument \"%s\"\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    /* Block the signals before any thread starts, so every thread inherits the mask and
     * sigwait below is the only place they arrive. */
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    rein_error_clear(&err);
    s = ms_start((int)port, &err);
    if (!s) {
        fprintf(stderr, "rein-model-server: %s\n", err.msg);
        return 1;
    }
    ms_set_validate(s, validate);
    ms_set_log_limit(s, (size_t)log_limit);
    if (key)
        ms_set_api_key(s, key);
    if (scenario && ms_load(s, scenario, false, &err) != REIN_OK) {
        fprintf(stderr, "rein-model-server: %s\n", err.msg);
        ms_stop(s);
        return 1;
    }
    printf("%s\n", ms_url(s));
    fflush(stdout);
    while (sigwait(&set, &sig) != 0)
        ;
    ms_stop(s);
    return 0;
}
