/*
 * The rein side of bench/schema.sh: compiles every tool schema of the case file once, then
 * validates every argument object in a loop for about two seconds and prints validations per
 * second of CPU time, once collecting every error with its message and once stopping at the
 * first.
 *
 * Then, measured as Blaze's CLI measures (bench/schema_blaze.py), each instance is validated
 * LOOP times in a row and the mean per validation in wall-clock time, as Blaze's CLI times
 * it, summed over the instances ("rein-loop"), in both modes: with the errors and their
 * messages; verdict only (no result and no rein_error, as Blaze's benchmark runs); and, for
 * all errors, counted (no result but a rein_error, whose message gives the number of errors,
 * so every error of an invalid instance is found, as Blaze's exhaustive mode does, but none
 * is written). With nothing asked but the verdict, both modes stop at the first error: the
 * "verdict only" all-errors figure is the first-error one. Repeating one instance keeps its schema in the cache, which
 * cycling through all 1,570 compiled schemas does not: on a busy machine the cycling figure
 * swings with what other processes leave in the cache, the looped one much less.
 * Usage: schema_bench CASES.json SECONDS [LOOP]
 */
#include <rein/rein.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* CPU time of this process: on a shared machine, time spent waiting for a core is not ours. */
static int64_t cpu_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

struct bcase {
    rein_schema *schema;
    json_t *instances;
};

/* Validations per second over one stretch of about seconds; counts from the first round. */
static double stretch(struct bcase *cases, size_t n, unsigned flags, double seconds,
                      rein_schema_result *res, size_t *valid, size_t *invalid, size_t *errors)
{
    int64_t start = cpu_ns(), deadline = start + (int64_t)(seconds * 1e9);
    size_t count = 0;
    int rounds = 0;

    *valid = *invalid = *errors = 0;
    while (cpu_ns() < deadline || rounds == 0) {
        for (size_t i = 0; i < n; i++) {
            for (size_t k = 0; k < json_array_size(cases[i].instances); k++) {
                rein_err rc = rein_schema_validate(
                    cases[i].schema, json_array_get(cases[i].instances, k), flags, res, NULL);
                count++;
                if (rounds == 0) {
                    *valid += rc == REIN_OK;
                    *invalid += rc == REIN_EINVALID;
                    *errors += rein_schema_result_count(res);
                }
            }
        }
        rounds++;
    }
    return (double)count / ((double)(cpu_ns() - start) / 1e9);
}

/* The machine is shared: the best of five stretches is the least disturbed figure. */
static void run(struct bcase *cases, size_t n, unsigned flags, double seconds, const char *label)
{
    rein_schema_result *res = rein_schema_result_new();
    size_t valid, invalid, errors;
    double best = 0;

    for (int i = 0; i < 5; i++) {
        double rate = stretch(cases, n, flags, seconds / 5, res, &valid, &invalid, &errors);
        if (rate > best)
            best = rate;
    }
    printf("rein %s: %.0f validations/s (valid %zu, invalid %zu, %zu errors reported)\n", label,
           best, valid, invalid, errors);
    rein_schema_result_free(res);
}

/* Wall-clock time, as Blaze's CLI times its loops (a core taken away counts for both). */
static int64_t wall_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Instances over the sum of each instance's mean time of loop validations in a row. */
enum looped { VERDICT, COUNTED, MESSAGES };

static void run_looped(struct bcase *cases, size_t n, unsigned flags, enum looped what, int loop,
                       const char *label)
{
    static const char *const whats[] = {"verdict only", "counted", "with messages"};
    rein_schema_result *res = what == MESSAGES ? rein_schema_result_new() : NULL;
    rein_error e, *err = what == COUNTED ? &e : NULL;
    size_t valid = 0, invalid = 0, count = 0;
    double total_ns = 0;

    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < json_array_size(cases[i].instances); k++) {
            json_t *inst = json_array_get(cases[i].instances, k);
            rein_err rc = REIN_OK;
            int64_t t0 = wall_ns();
            for (int r = 0; r < loop; r++)
                rc = rein_schema_validate(cases[i].schema, inst, flags, res, err);
            total_ns += (double)(wall_ns() - t0) / loop;
            valid += rc == REIN_OK;
            invalid += rc == REIN_EINVALID;
            count++;
        }
    }
    printf("rein-loop %s: %.3f validations/s (valid %zu, invalid %zu, %s)\n", label,
           (double)count / (total_ns / 1e9), valid, invalid, whats[what]);
    rein_schema_result_free(res);
}

int main(int argc, char **argv)
{
    rein_error err;
    json_t *doc;
    struct bcase *cases;
    size_t n, ok = 0;

    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: schema_bench CASES.json SECONDS [LOOP]\n");
        return 2;
    }
    doc = rein_json_load_file(argv[1], &err);
    if (!doc) {
        fprintf(stderr, "schema_bench: %s\n", err.msg);
        return 2;
    }
    n = json_array_size(doc);
    cases = calloc(n ? n : 1, sizeof(*cases));
    for (size_t i = 0; i < n; i++) {
        json_t *c = json_array_get(doc, i);
        cases[ok].schema = rein_schema_compile(json_object_get(c, "schema"), NULL, &err);
        if (!cases[ok].schema) {
            fprintf(stderr, "schema_bench: %s: %s\n", json_string_value(json_object_get(c, "name")),
                    err.msg);
            continue;
        }
        cases[ok++].instances = json_object_get(c, "instances");
    }
    run(cases, ok, 0, strtod(argv[2], NULL), "all errors ");
    run(cases, ok, REIN_SCHEMA_FIRST_ERROR, strtod(argv[2], NULL), "first error");
    if (argc == 4) {
        int loop = (int)strtol(argv[3], NULL, 10);
        run_looped(cases, ok, 0, MESSAGES, loop, "all errors ");
        run_looped(cases, ok, REIN_SCHEMA_FIRST_ERROR, MESSAGES, loop, "first error");
        run_looped(cases, ok, 0, COUNTED, loop, "all errors ");
        run_looped(cases, ok, REIN_SCHEMA_FIRST_ERROR, VERDICT, loop, "first error");
    }
    for (size_t i = 0; i < ok; i++)
        rein_schema_free(cases[i].schema);
    free(cases);
    json_decref(doc);
    return 0;
}
