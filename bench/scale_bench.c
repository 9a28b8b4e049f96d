/*
 * bench/scale_bench.c: rein's own CPU per agent step against the length of the history, for
 * bench/scale.sh (issue 25, goal 2).
 *
 *   scale_bench URL MODE PRIOR TURNS [WIRE]
 *
 * WIRE is the provider's wire: openai (chat completions, the default), anthropic, gemini or
 * bedrock (signed with SigV4 from made-up AWS credentials; the server checks no signature).
 * MODE is "unique" (the scripted model server makes a fresh id for every call) or "repeated"
 * (every reply's call is "call_0", as local models number their calls). PRIOR messages of
 * earlier turns are put in a history first (groups of user, assistant with one call, its tool
 * result, assistant answer; in repeated mode the calls carry the ids earlier renames left:
 * call_0, call_0_2, call_0_3, ...). Then TURNS turns of two steps each (a call to echo, then
 * the answer) run on that history, each truncated back to PRIOR messages afterwards, against
 * the scripted model server at URL (started with --log-limit 2).
 *
 * The context window is set far above the history, so every message is sent.
 *
 * Own time: the process's CPU time over the measured turns (the server is another process)
 * minus the CPU time of a bare libcurl client sending the same two request bodies as often
 * (without an Expect: 100-continue wait, as rein sends them) and reading the replies (what sending and receiving costs any client), per step. The turns
 * run in BLOCKS blocks, each followed by the bare client's block of the same size, and the
 * figures are the medians over blocks: a burst of load from other processes then spoils one
 * block, not the subtraction, which matters most where rein's own time is smallest (an
 * empty history).
 *
 * Prints one line: "own_us_per_step rein_cpu_us_per_step bare_cpu_us_per_step body_bytes".
 *
 * Under callgrind (bench/scale.sh CALLGRIND=1), block_turns and block_bare are the functions
 * to count: each runs the measured turns of one block, or the bare client's, and nothing else
 * (the history is filled and encoded once before them).
 */
#define BENCH_NAME "scale_bench"
#include "bench_util.h"
#include <rein/rein.h>

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STEPS  2
#define BLOCKS 7

static const char *const tools[] = {"echo"};

static void script(CURL *c, const char *base, bool repeated)
{
    char s[512];

    snprintf(s, sizeof(s),
             "{\"name\":\"scale\",\"replies\":["
             "{\"times\":0,\"match\":{\"last_role\":\"user\"},"
             "\"tool_calls\":[{%s\"name\":\"echo\",\"arguments\":\"{\\\"text\\\":\\\"x\\\"}\"}]},"
             "{\"times\":0,\"match\":{\"last_role\":\"tool\"},\"text\":\"done\"}]}",
             repeated ? "\"id\":\"call_0\"," : "");
    bench_control(c, base, "/__reset", "");
    bench_control(c, base, "/__script", s);
}

static void add(rein_history *h, json_t *m)
{
    if (!m || rein_history_append(h, m, NULL) != REIN_OK)
        bench_die("building the history", NULL);
    json_decref(m);
}

/* PRIOR messages of earlier turns, as rein's loop leaves them. */
static void fill(rein_history *h, size_t prior, bool repeated)
{
    char id[48], text[64];

    for (size_t k = 0; rein_history_len(h) < prior; k++) {
        if (!repeated)
            snprintf(id, sizeof(id), "call_u%zu", k);
        else if (k == 0)
            snprintf(id, sizeof(id), "call_0");
        else
            snprintf(id, sizeof(id), "call_0_%zu", k + 1);
        snprintf(text, sizeof(text), "Echo x, please (turn %zu).", k);
        add(h, json_pack("{s:s, s:s}", "role", "user", "content", text));
        if (rein_history_len(h) < prior)
            add(h,
                json_pack("{s:s, s:s, s:[{s:s, s:s, s:s}]}", "role", "assistant", "content", "",
                          "tool_calls", "id", id, "name", "echo", "arguments", "{\"text\":\"x\"}"));
        if (rein_history_len(h) < prior &&
            rein_history_add_tool_result(h, id, "echo", "{\"text\":\"x\"}", false) != REIN_OK)
            bench_die("building the history", NULL);
        if (rein_history_len(h) < prior)
            add(h, json_pack("{s:s, s:s}", "role", "assistant", "content", "done"));
    }
}

static void turn(rein_agent *a, rein_history *h, size_t prior)
{
    /* Self-verification off: it would add a request of its own to each turn (rein asks the
     * model about the echo call), which the bare client does not replay. */
    struct rein_agent_turn_opts o = {
        .tools = tools, .tool_count = 1, .verification = REIN_AGENT_VERIFY_OFF};
    rein_agent_result *r = NULL;
    rein_error err;

    if (rein_agent_run(a, h, "Echo x, please.", &o, &r, &err) != REIN_OK)
        bench_die("turn", err.msg);
    if (rein_agent_result_stop(r) != REIN_AGENT_STOP_FINAL_ANSWER ||
        rein_agent_result_model_calls(r) != STEPS)
        bench_die("unexpected turn", rein_agent_result_detail(r));
    rein_agent_result_free(r);
    rein_history_truncate(h, prior);
}

/* CPU time of a bare client sending the logged bodies `turns` times. */
static double bare(CURL *c, const char *base, const json_t *bodies, int turns)
{
    struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
    double t0;

    /* As rein sends it: no "Expect: 100-continue" wait before a large body (libcurl's default
     * sends one above 1 KB; with it the server is reading before the body goes, which makes
     * sending cheaper in CPU and slower by a round trip). */
    hdr = curl_slist_append(hdr, "Expect:");
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, bench_discard);
    t0 = bench_cpu_us();
    for (int t = 0; t < turns; t++) {
        for (size_t i = 0; i < json_array_size(bodies); i++) {
            const json_t *r = json_array_get(bodies, i), *b = json_object_get(r, "body");
            const char *query = json_string_value(json_object_get(r, "query"));
            char url[1024];
            /* Where rein sent it: the wire's path (and Gemini's ?alt=sse). */
            snprintf(url, sizeof(url), "%s%s%s%s", base,
                     json_string_value(json_object_get(r, "path")), query && query[0] ? "?" : "",
                     query ? query : "");
            curl_easy_setopt(c, CURLOPT_URL, url);
            curl_easy_setopt(c, CURLOPT_POSTFIELDS, json_string_value(b));
            curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)json_string_length(b));
            if (curl_easy_perform(c) != CURLE_OK)
                bench_die("bare request failed", NULL);
        }
    }
    curl_slist_free_all(hdr);
    return bench_cpu_us() - t0;
}

/* The two requests of the first turn since the last reset, from the server's log: each
 * {path, query, body}. */
static json_t *logged_bodies(CURL *c, const char *base, size_t *bytes)
{
    char url[512];
    char *text;
    json_t *log, *bodies = json_array();

    snprintf(url, sizeof(url), "%s/__requests", base);
    text = bench_request(c, url, NULL, 0);
    log = text ? json_loads(text, 0, NULL) : NULL;
    rein_free(text);
    *bytes = 0;
    for (size_t i = 0; i < STEPS; i++) {
        json_t *r = json_array_get(log, i);
        json_array_append_new(
            bodies, json_pack("{s:O, s:O?, s:O}", "path", json_object_get(r, "path"), "query",
                              json_object_get(r, "query"), "body", json_object_get(r, "body")));
        *bytes += json_string_length(json_object_get(r, "body"));
    }
    json_decref(log);
    if (json_array_size(bodies) != STEPS)
        bench_die("the server logged no requests (start it with --log-limit 2)", NULL);
    return bodies;
}

/* One block's measured turns, and the bare client's: the functions callgrind counts. */
__attribute__((noinline)) static void block_turns(rein_agent *a, rein_history *h, size_t prior,
                                                  int n)
{
    for (int i = 0; i < n; i++)
        turn(a, h, prior);
}

__attribute__((noinline)) static double block_bare(CURL *c, const char *base, const json_t *bodies,
                                                   int n)
{
    return bare(c, base, bodies, n);
}

/* The provider of wire `wire` against the server at base. */
static rein_provider *provider_for(const char *base, const char *wire, rein_provider_config *cfg)
{
    static const char *const names[][3] = {{"openai", "openai-compatible", "/v1"},
                                           {"anthropic", "anthropic", ""},
                                           {"gemini", "gemini", "/v1beta"},
                                           {"bedrock", "bedrock", ""}};
    char url[512];
    rein_error err;
    rein_provider *p;

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcmp(wire, names[i][0]) != 0)
            continue;
        if (strcmp(wire, "bedrock") == 0) {
            /* SigV4 from these, as a deployment signs; the server checks no signature. */
            unsetenv("AWS_BEARER_TOKEN_BEDROCK");
            unsetenv("AWS_PROFILE");
            setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
            setenv("AWS_ACCESS_KEY_ID", "AKIDBENCH", 1);
            setenv("AWS_SECRET_ACCESS_KEY", "bench-secret", 1);
            setenv("AWS_REGION", "us-east-1", 1);
        } else if (rein_provider_config_set_api_key(cfg, "bench-key") != REIN_OK) {
            bench_die("provider", "out of memory");
        }
        snprintf(url, sizeof(url), "%s%s", base, names[i][2]);
        if (rein_provider_config_set_provider(cfg, names[i][1], &err) ||
            rein_provider_config_set_base_url(cfg, url) ||
            rein_provider_config_set_model(cfg, "bench-model") ||
            !(p = rein_provider_new(cfg, &err)))
            bench_die("provider", err.msg);
        return p;
    }
    bench_die("unknown wire (openai, anthropic, gemini, bedrock)", wire);
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
    rein_provider_config *cfg;
    rein_provider *p = NULL;
    rein_registry *reg;
    rein_agent *a = NULL;
    rein_history *h;
    rein_error err;
    size_t prior, bytes;
    bool repeated;
    int turns, per_block;
    double t0, own[BLOCKS], rein_cpu[BLOCKS], bare_cpu[BLOCKS];
    json_t *bodies;
    CURL *c;

    if (argc != 5 && argc != 6) {
        fprintf(stderr, "usage: scale_bench URL unique|repeated PRIOR TURNS [WIRE]\n");
        return 2;
    }
    repeated = strcmp(argv[2], "repeated") == 0;
    prior = (size_t)strtoul(argv[3], NULL, 10);
    turns = (int)strtol(argv[4], NULL, 10);
    curl_global_init(CURL_GLOBAL_DEFAULT);
#ifdef REIN_TRACE_H /* absent from checkouts before tracing (bench/scale.sh BEFORE=) */
    /* Span export when OTEL_* variables configure it, as the rein command does
     * (bench/trace.sh measures what it costs). */
    if (rein_trace_setup(&err) != REIN_OK)
        bench_die("tracing", err.msg);
#endif
    cfg = rein_provider_config_new();
    p = provider_for(argv[1], argc == 6 ? argv[5] : "openai", cfg);
    reg = rein_registry_new(&err);
    if (!reg || rein_skills_register_builtins(reg, NULL, &err) ||
        !(a = rein_agent_new(p, reg, &err)))
        bench_die("agent", err.msg);
    /* The whole history goes to the model: this measures the cost of its length, not of
     * fitting it into a window (which drops old exchanges). */
    rein_agent_set_context_window(a, (int64_t)1 << 40);
    c = curl_easy_init();
    script(c, argv[1], repeated);
    h = rein_history_new();
    fill(h, prior, repeated);

    /* The first turn is logged (its bodies are the bare client's) and, with two more, warms
     * the caches: every prior message is encoded once, as in a running conversation. */
    for (int i = 0; i < 3; i++)
        turn(a, h, prior);
    bodies = logged_bodies(c, argv[1], &bytes);

    (void)bare(c, argv[1], bodies, 2);
    per_block = turns / BLOCKS > 0 ? turns / BLOCKS : 1;
    for (int b = 0; b < BLOCKS; b++) {
        t0 = bench_cpu_us();
        block_turns(a, h, prior, per_block);
        rein_cpu[b] = (bench_cpu_us() - t0) / (STEPS * per_block);
        bare_cpu[b] = block_bare(c, argv[1], bodies, per_block) / (STEPS * per_block);
        own[b] = rein_cpu[b] - bare_cpu[b];
    }

#ifdef REIN_TRACE_H
    rein_trace_shutdown(1000);
#endif
    printf("%.1f %.1f %.1f %zu\n", median(own, BLOCKS), median(rein_cpu, BLOCKS),
           median(bare_cpu, BLOCKS), bytes / STEPS);
    json_decref(bodies);
    curl_easy_cleanup(c);
    rein_history_free(h);
    rein_agent_free(a);
    rein_registry_free(reg);
    rein_provider_free(p);
    rein_provider_config_free(cfg);
    curl_global_cleanup();
    return 0;
}
