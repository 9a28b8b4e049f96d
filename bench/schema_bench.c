/*
 * The rein side of bench/schema.sh: compiles every tool schema of the case file once, then
 * validates every argument object in a loop for about two seconds and prints validations per
 * second, once collecting every error with its message and once stopping at the first.
 * Usage: schema_bench CASES.json SECONDS
 */
#include <rein/rein.h>

#include <stdio.h>
#include <stdlib.h>

struct bcase {
    rein_schema *schema;
    json_t *instances;
};

/* Validations per second over one stretch of about seconds; counts from the first round. */
static double stretch(struct bcase *cases, size_t n, unsigned flags, double seconds,
                      rein_schema_result *res, size_t *valid, size_t *invalid, size_t *errors)
{
    int64_t start = rein_now_ns(), deadline = start + (int64_t)(seconds * 1e9);
    size_t count = 0;
    int rounds = 0;

    *valid = *invalid = *errors = 0;
    while (rein_now_ns() < deadline || rounds == 0) {
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
    return (double)count / ((double)(rein_now_ns() - start) / 1e9);
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

int main(int argc, char **argv)
{
    rein_error err;
    json_t *doc;
    struct bcase *cases;
    size_t n, ok = 0;

    if (argc != 3) {
        fprintf(stderr, "usage: schema_bench CASES.json SECONDS\n");
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
    for (size_t i = 0; i < ok; i++)
        rein_schema_free(cases[i].schema);
    free(cases);
    json_decref(doc);
    return 0;
}
