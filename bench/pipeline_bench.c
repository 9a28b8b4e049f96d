/*
 * Benchmark: one tool call through the whole pipeline, as the agent loop makes it: the name
 * as the model sent it (resolved by the repair step), the argument text parsed and validated
 * against the compiled schema, the call recorded in the ledger (pending, then success), echo
 * executed, and the result object made. Prints calls per second (a batch timed as a whole, in
 * CPU time, so other programs on the machine do not count) and the median wall time of one
 * call (each call timed), then the same with the tool message also encoded as JSON text (work
 * the Python peer does not do: it stops at a dict).
 *
 * Each figure is the best of ROUNDS rounds: on a shared machine other programs only ever
 * make a round slower.
 *
 *   pipeline_bench [CALLS] [ROUNDS]
 */
#include <rein/rein.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TURN 1000 /* calls per ledger, as in a long conversation */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return (x > y) - (x < y);
}

static int64_t cpu_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* One call; msg (may be NULL) receives the encoded tool message. */
static void one_call(const rein_registry *reg, rein_ledger *ledger, struct rein_buf *msg, long i)
{
    static const char args[] = "{\"text\": \"hello world\"}";
    char call_id[32];
    struct rein_call_input in = {.call_id = call_id,
                                 .name = "echo",
                                 .args_text = args,
                                 .args_len = sizeof(args) - 1,
                                 .trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"};
    struct rein_call_opts opts = {.ledger = ledger};
    rein_call_result *res = NULL;
    struct rein_jw w;

    snprintf(call_id, sizeof(call_id), "call_%ld", i);
    if (rein_call_run(reg, &in, &opts, &res, NULL) || !rein_call_result_ok(res)) {
        fprintf(stderr, "pipeline_bench: call %ld failed: %s\n", i,
                res ? rein_call_result_message(res) : "no result");
        exit(1);
    }
    if (msg) {
        rein_buf_reset(msg);
        rein_jw_init(&w, msg);
        rein_call_result_write_for_model(res, &w);
        if (rein_jw_finish(&w)) {
            fprintf(stderr, "pipeline_bench: encoding failed\n");
            exit(1);
        }
    }
    rein_call_result_free(res);
}

struct figures {
    double calls_per_sec;
    int64_t median_ns, p99_ns;
};

static struct figures measure(const rein_registry *reg, long n, struct rein_buf *msg, int64_t *lat)
{
    rein_ledger *ledger = rein_ledger_new();
    struct figures f;
    int64_t t0;

    /* Throughput: the batch as a whole, a fresh ledger every TURN calls. */
    t0 = cpu_ns();
    for (long i = 0; i < n; i++) {
        if (i && i % TURN == 0) {
            rein_ledger_free(ledger);
            ledger = rein_ledger_new();
        }
        one_call(reg, ledger, msg, i);
    }
    f.calls_per_sec = (double)n * 1e9 / (double)(cpu_ns() - t0);
    /* Latency: each call timed on its own. */
    for (long i = 0; i < n; i++) {
        if (i && i % TURN == 0) {
            rein_ledger_free(ledger);
            ledger = rein_ledger_new();
        }
        int64_t s = rein_now_ns();
        one_call(reg, ledger, msg, i);
        lat[i] = rein_now_ns() - s;
    }
    qsort(lat, (size_t)n, sizeof(*lat), cmp_i64);
    f.median_ns = lat[n / 2];
    f.p99_ns = lat[n * 99 / 100];
    rein_ledger_free(ledger);
    return f;
}

static void best(struct figures *keep, const struct figures *f)
{
    if (f->calls_per_sec > keep->calls_per_sec)
        keep->calls_per_sec = f->calls_per_sec;
    if (f->median_ns < keep->median_ns) {
        keep->median_ns = f->median_ns;
        keep->p99_ns = f->p99_ns;
    }
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 200000;
    int rounds = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 3;
    rein_error err;
    rein_registry *reg = rein_registry_new(&err);
    rein_ledger *ledger = rein_ledger_new();
    struct rein_buf msg;
    struct figures plain, encoded;
    int64_t *lat;

    if (n < TURN)
        n = TURN;
    lat = calloc((size_t)n, sizeof(*lat));
    if (!reg || !ledger || !lat || rein_skills_register_builtins(reg, NULL, &err)) {
        fprintf(stderr, "pipeline_bench: setup failed: %s\n", err.msg);
        return 1;
    }
    rein_buf_init(&msg, 0);
    /* Warm up: first-use work (page faults, the clocks) is not the steady state. */
    for (long i = 0; i < TURN; i++)
        one_call(reg, ledger, &msg, i);
    rein_ledger_free(ledger);
    plain = measure(reg, n, NULL, lat);
    encoded = measure(reg, n, &msg, lat);
    for (int r = 1; r < rounds; r++) {
        struct figures p = measure(reg, n, NULL, lat), e = measure(reg, n, &msg, lat);
        best(&plain, &p);
        best(&encoded, &e);
    }
    printf("calls=%ld\ncalls_per_sec=%.0f\nmedian_ns=%lld\np99_ns=%lld\n"
           "encoded_calls_per_sec=%.0f\nencoded_median_ns=%lld\nmessage=%s\n",
           n, plain.calls_per_sec, (long long)plain.median_ns, (long long)plain.p99_ns,
           encoded.calls_per_sec, (long long)encoded.median_ns, msg.ptr);
    rein_buf_release(&msg);
    rein_registry_free(reg);
    free(lat);
    return 0;
}
