/*
 * bench/trace_step.c: whole agent steps for bench/trace_step.sh, which counts their instructions
 * with callgrind (tracing on against off; issue 23's goal of under 5 µs per step).
 *
 *   trace_step URL TURNS [repair]
 *
 * Runs 3 warm-up turns and then TURNS turns of two steps each against the scripted model
 * server at URL: the model calls echo, rein runs it, the model answers. With "repair" the
 * model names the tool "Echo", so every call also goes through the name repair (a span event
 * with the name before and after). Each turn records the spans a real turn records:
 * invoke_agent, two chat spans and an execute_tool span, with the attributes and events rein
 * sets. The OTEL_* variables configure export as for the rein command. At the end the
 * exporter is shut down (waiting up to TRACE_STEP_SHUTDOWN_MS, default 60000), so every span
 * is encoded and sent before the process exits: the count covers the exporter thread's work
 * too.
 *
 * Prints one line: "turns N ended E exported X dropped D cpu_us C user_us U", the CPU time
 * (user and system) and the user time alone of the whole process, all threads, from the first
 * measured turn to the end of the shutdown.
 */
#define BENCH_NAME "trace_step"
#include "bench_util.h"
#include <rein/rein.h>

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define STEPS 2

static const char *const tools[] = {"echo"};

static double user_us(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec * 1e6 + (double)ru.ru_utime.tv_usec;
}

static void turn(rein_agent *a, rein_history *h)
{
    /* Verification off: "bench-model" cannot state a confidence, so "auto" would ask the model
     * to verify every call (one more chat span), and the scripted server's answer to that is
     * not a YES: the call would be denied and never run. */
    struct rein_agent_turn_opts o = {
        .tools = tools, .tool_count = 1, .verification = REIN_AGENT_VERIFY_OFF};
    rein_agent_result *r = NULL;
    rein_error err;

    if (rein_agent_run(a, h, "Echo x, please.", &o, &r, &err) != REIN_OK)
        bench_die("turn", err.msg);
    if (!rein_agent_result_success(r) ||
        rein_agent_result_stop(r) != REIN_AGENT_STOP_FINAL_ANSWER ||
        rein_agent_result_model_calls(r) != STEPS || rein_agent_result_tool_call_count(r) != 1)
        bench_die("unexpected turn", rein_agent_result_detail(r));
    rein_agent_result_free(r);
    rein_history_truncate(h, 0);
}

int main(int argc, char **argv)
{
    rein_provider_config *cfg;
    rein_provider *p = NULL;
    rein_registry *reg;
    rein_agent *a = NULL;
    rein_history *h;
    rein_error err;
    struct rein_trace_stats st;
    char openai[512], script[512];
    int turns;
    const char *wait = getenv("TRACE_STEP_SHUTDOWN_MS");
    double t0, u0;

    if (argc < 3 || argc > 4 || (argc == 4 && strcmp(argv[3], "repair") != 0)) {
        fprintf(stderr, "usage: trace_step URL TURNS [repair]\n");
        return 2;
    }
    turns = (int)strtol(argv[2], NULL, 10);
    snprintf(openai, sizeof(openai), "%s/v1", argv[1]);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (rein_trace_setup(&err) != REIN_OK)
        bench_die("tracing", err.msg);
    snprintf(script, sizeof(script),
             "{\"name\":\"trace\",\"replies\":["
             "{\"times\":0,\"match\":{\"last_role\":\"user\"},"
             "\"tool_calls\":[{\"name\":\"%s\",\"arguments\":\"{\\\"text\\\":\\\"x\\\"}\"}]},"
             "{\"times\":0,\"match\":{\"last_role\":\"tool\"},\"text\":\"done\"}]}",
             argc == 4 ? "Echo" : "echo");
    {
        CURL *c = curl_easy_init();
        if (!c)
            bench_die("curl", NULL);
        bench_control(c, argv[1], "/__reset", "");
        bench_control(c, argv[1], "/__script", script);
        curl_easy_cleanup(c);
    }

    cfg = rein_provider_config_new();
    if (rein_provider_config_set_provider(cfg, "openai-compatible", &err) ||
        rein_provider_config_set_base_url(cfg, openai) ||
        rein_provider_config_set_model(cfg, "bench-model") || !(p = rein_provider_new(cfg, &err)))
        bench_die("provider", err.msg);
    reg = rein_registry_new(&err);
    if (!reg || rein_skills_register_builtins(reg, NULL, &err) ||
        !(a = rein_agent_new(p, reg, &err)))
        bench_die("agent", err.msg);
    h = rein_history_new();
    for (int i = 0; i < 3; i++)
        turn(a, h);
    t0 = bench_cpu_us();
    u0 = user_us();
    for (int i = 0; i < turns; i++)
        turn(a, h);
    rein_trace_shutdown(wait ? strtol(wait, NULL, 10) : 60000);
    rein_trace_stats(&st);
    printf("turns %d ended %llu exported %llu dropped %llu cpu_us %.0f user_us %.0f\n", turns,
           (unsigned long long)st.ended, (unsigned long long)st.exported,
           (unsigned long long)st.dropped, bench_cpu_us() - t0, user_us() - u0);
    rein_history_free(h);
    rein_agent_free(a);
    rein_registry_free(reg);
    rein_provider_free(p);
    rein_provider_config_free(cfg);
    curl_global_cleanup();
    return 0;
}
