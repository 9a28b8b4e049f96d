/*
 * bench/trace_span.c: what tracing costs per span, apart from the agent (bench/trace_span.sh).
 * Runs N turns of the 4 spans a two-step turn records (invoke_agent, two chat spans, an
 * execute_tool) with the attributes rein sets, then shuts the exporter down (everything is
 * sent), and prints the process CPU per span. The OTEL_* variables configure export.
 * usage: trace_span N
 */
#define BENCH_NAME "trace_span"
#include "bench_util.h"
#include <rein/rein.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
int main(int argc, char **argv)
{
    int n = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 20000;
    rein_error err;
    const char *reasons[] = {"tool_calls"};
    if (rein_trace_setup(&err) != REIN_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    double t0 = bench_cpu_us();
    for (int i = 0; i < n; i++) {
        struct rein_span turn, chat, tool, chat2;
        rein_span_start(&turn, "invoke_agent", REIN_SPAN_INTERNAL, NULL);
        rein_span_set_str(&turn, "gen_ai.operation.name", "invoke_agent");
        rein_span_set_str(&turn, "gen_ai.provider.name", "openai-compatible");
        rein_span_set_str(&turn, "gen_ai.request.model", "test-model");
        for (int k = 0; k < 2; k++) {
            struct rein_span *c = k ? &chat2 : &chat;
            rein_span_start(c, "chat test-model", REIN_SPAN_CLIENT, NULL);
            rein_span_set_str(c, "gen_ai.operation.name", "chat");
            rein_span_set_str(c, "gen_ai.provider.name", "openai-compatible");
            rein_span_set_str(c, "gen_ai.request.model", "test-model");
            rein_span_set_strs(c, "gen_ai.response.finish_reasons", reasons, 1);
            rein_span_set_int(c, "gen_ai.usage.input_tokens", 120);
            rein_span_set_int(c, "gen_ai.usage.output_tokens", 12);
            rein_span_set_int(c, "rein.tool_calls", 1);
            rein_span_end(c);
            if (k == 0) {
                rein_span_start(&tool, "execute_tool echo", REIN_SPAN_INTERNAL, NULL);
                rein_span_set_str(&tool, "gen_ai.operation.name", "execute_tool");
                rein_span_set_str(&tool, "gen_ai.tool.name", "echo");
                rein_span_set_str(&tool, "gen_ai.tool.call.id", "call_abcdef123456");
                rein_span_set_str(&tool, "gen_ai.tool.type", "function");
                rein_span_set_str(&tool, "rein.tool.sent_name", "echo");
                rein_span_set_int(&tool, "rein.preflight.errors", 0);
                rein_span_set_str(&tool, "rein.call.status", "success");
                rein_span_end(&tool);
            }
        }
        rein_span_set_str(&turn, "rein.stop_reason", "final_answer");
        rein_span_set_int(&turn, "rein.iterations", 2);
        rein_span_set_int(&turn, "gen_ai.usage.input_tokens", 240);
        rein_span_end(&turn);
        if (i % 256 == 255) {
            struct timespec d = {0, 1000000};
            nanosleep(&d, NULL); /* let the exporter keep up, as a turn's wait would */
        }
    }
    double hot = bench_cpu_us() - t0;
    rein_trace_shutdown(10000);
    double all = bench_cpu_us() - t0;
    struct rein_trace_stats st;
    rein_trace_stats(&st);
    printf("spans %d: hot %.2f us/span, with export %.2f us/span (exported %llu dropped %llu)\n",
           n * 4, hot / (n * 4), all / (n * 4), (unsigned long long)st.exported,
           (unsigned long long)st.dropped);
    return 0;
}
