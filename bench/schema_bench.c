/*
 * The rein side of bench/schema.sh, driven by bench/schema_rounds.py over a pipe so that the
 * driver can interleave rein with its peers in short turns: every compiled schema of the case
 * file is kept, and each command on stdin is answered with one line on stdout.
 *
 *   cycle all|first SECONDS [FORM]
 *                             one stretch cycling through every argument object, each error's
 *                             message and instance location read (what a caller does with
 *                             them), timed in CPU time of this process (waiting for a core is
 *                             not ours): "RATE VALID INVALID ERRORS". FORM is what is validated:
 *                             tree, a jansson tree parsed beforehand (the default); doc, rein's
 *                             document form (rein/doc.h) parsed beforehand; text, the argument's
 *                             JSON text, parsed into a document, validated and freed each time,
 *                             which is what the call pipeline does with a model's arguments
 *   loop I LOOP               the instances of case I, each validated LOOP times as Blaze's CLI
 *                             times its --benchmark --loop (see below), in four modes: first
 *                             error verdict only, all errors counted, first error and all errors
 *                             with messages read; first as trees, then as documents:
 *                             "V C MF MA DV DC DMF DMA VALID INVALID", each the sum over the
 *                             instances of the mean per validation, in ns
 *   loop I LOOP FORM MODE     the same for one form (tree, doc) and one mode (verdict, counted,
 *                             first, all), every instance looped once unmeasured and then
 *                             measured, as one Blaze run takes one mode: "NS VALID INVALID".
 *                             The driver sends these, so that each form and mode is timed in a
 *                             stretch as short as a Blaze run, right after the process woke
 *                             up as Blaze's does, instead of at the tail of one long command
 *                             (which a busy machine preempts more often)
 *   tight I LOOP              as loop, but the LOOP validations in a row between two clock
 *                             reads (no clock inside the loop): for comparison only
 *
 * Blaze's loop shape (its CLI, command_validate.cc): it first takes the mean of LOOP empty
 * clock-read pairs, then reads the clock (std::chrono::high_resolution_clock, which is
 * CLOCK_REALTIME in libstdc++) before and after every single validation, subtracts that mean
 * and counts a negative result as zero. The same is done here, so both sides pay the same clock
 * reads around each validation and lose the same overlap between consecutive validations.
 * Each loop runs once unmeasured first, as each of Blaze's does (see schema_rounds.py).
 *
 * "Counted" is every error found and none written (a rein_error gets "N validation errors"),
 * which is what Blaze's exhaustive mode does when benchmarking. Without a result both rein
 * modes stop at the first error for the verdict only, so that mode is measured once.
 */
#include <rein/rein.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct bcase {
    rein_schema *schema;
    json_t *instances;
    json_t *texts;   /* each instance's JSON text, as a model sends it */
    rein_doc **docs; /* each text parsed beforehand */
};

enum form { TREE, DOC, TEXT };

/* One validation of instance k of c in form f. */
static rein_err validate(const struct bcase *c, size_t k, enum form f, unsigned flags,
                         rein_schema_result *res, rein_error *err)
{
    rein_doc *doc;
    json_t *text;
    rein_err rc;

    if (f == TREE)
        return rein_schema_validate(c->schema, json_array_get(c->instances, k), flags, res, err);
    if (f == DOC)
        return rein_schema_validate_doc(c->schema, c->docs[k], flags, res, err);
    text = json_array_get(c->texts, k);
    doc = rein_doc_parse(json_string_value(text), json_string_length(text), err);
    if (!doc)
        return REIN_EPARSE;
    rc = rein_schema_validate_doc(c->schema, doc, flags, res, err);
    rein_doc_free(doc);
    return rc;
}

static int64_t clock_ns(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* What a caller does with the errors: reads each message and instance location. */
static size_t read_errors(const rein_schema_result *res)
{
    size_t sum = 0, n = rein_schema_result_count(res);

    for (size_t i = 0; i < n; i++) {
        sum += (unsigned char)rein_schema_result_message(res, i)[0];
        sum += (unsigned char)rein_schema_result_instance_path(res, i)[0];
    }
    return sum;
}

static volatile size_t sink;

/* One stretch of about seconds of CPU time cycling through every instance (at least once). */
static void cycle(const struct bcase *cases, size_t n, unsigned flags, enum form f, double seconds,
                  rein_schema_result *res)
{
    int64_t start = clock_ns(CLOCK_PROCESS_CPUTIME_ID), deadline = start + (int64_t)(seconds * 1e9);
    size_t count = 0, valid = 0, invalid = 0, errors = 0, sum = 0;
    int rounds = 0;

    while (clock_ns(CLOCK_PROCESS_CPUTIME_ID) < deadline || rounds == 0) {
        for (size_t i = 0; i < n; i++) {
            for (size_t k = 0; k < json_array_size(cases[i].instances); k++) {
                rein_err rc = validate(&cases[i], k, f, flags, res, NULL);
                sum += read_errors(res);
                count++;
                if (rounds == 0) {
                    valid += rc == REIN_OK;
                    invalid += rc == REIN_EINVALID;
                    errors += rein_schema_result_count(res);
                }
            }
        }
        rounds++;
    }
    sink = sum;
    printf("%.1f %zu %zu %zu\n",
           (double)count / ((double)(clock_ns(CLOCK_PROCESS_CPUTIME_ID) - start) / 1e9), valid,
           invalid, errors);
}

enum mode { VERDICT, COUNTED, FIRST_MSG, ALL_MSG };

/* The mean ns of one validation of instance k of c in form f (TREE or DOC) and mode, over
 * loop validations timed as Blaze does (tight false) or as one block (tight true); *rc the
 * result. */
static double looped(const struct bcase *c, size_t k, enum form f, enum mode mode, int loop,
                     bool tight, rein_schema_result *res, rein_err *rc)
{
    unsigned flags = mode == VERDICT || mode == FIRST_MSG ? REIN_SCHEMA_FIRST_ERROR : 0;
    rein_schema_result *r = mode == FIRST_MSG || mode == ALL_MSG ? res : NULL;
    rein_error e, *err = mode == COUNTED ? &e : NULL;
    double empty = 0, sum = 0;
    size_t touched = 0;

    if (tight) {
        int64_t t0 = clock_ns(CLOCK_REALTIME);
        for (int i = 0; i < loop; i++) {
            *rc = validate(c, k, f, flags, r, err);
            if (r)
                touched += read_errors(r);
        }
        sink = touched;
        return (double)(clock_ns(CLOCK_REALTIME) - t0) / loop;
    }
    for (int i = 0; i < loop; i++) {
        int64_t t0 = clock_ns(CLOCK_REALTIME);
        empty += (double)(clock_ns(CLOCK_REALTIME) - t0);
    }
    empty /= loop;
    for (int i = 0; i < loop; i++) {
        int64_t t0 = clock_ns(CLOCK_REALTIME);
        *rc = validate(c, k, f, flags, r, err);
        if (r)
            touched += read_errors(r);
        double d = (double)(clock_ns(CLOCK_REALTIME) - t0) - empty;
        sum += d > 0 ? d : 0;
    }
    sink = touched;
    return sum / loop;
}

/* One form and mode over the instances of c, as one Blaze run takes one of its modes: every
 * instance looped once unmeasured, then again measured. */
static void loop_one(const struct bcase *c, int loop, enum form f, enum mode m,
                     rein_schema_result *res)
{
    size_t n = json_array_size(c->instances), valid = 0, invalid = 0;
    double ns = 0;

    for (size_t k = 0; k < n; k++) {
        rein_err rc = REIN_OK;
        looped(c, k, f, m, loop, false, res, &rc);
    }
    for (size_t k = 0; k < n; k++) {
        rein_err rc = REIN_OK;
        ns += looped(c, k, f, m, loop, false, res, &rc);
        valid += rc == REIN_OK;
        invalid += rc == REIN_EINVALID;
    }
    printf("%.3f %zu %zu\n", ns, valid, invalid);
}

static void loop_case(const struct bcase *c, int loop, bool tight, rein_schema_result *res)
{
    double ns[2][4] = {{0}};
    size_t valid = 0, invalid = 0;

    for (size_t k = 0; k < json_array_size(c->instances); k++) {
        rein_err rc = REIN_OK;
        /* Warmed up as Blaze's run is (bench/schema_rounds.py): once unmeasured. */
        for (int f = TREE; f <= DOC; f++) {
            for (int m = VERDICT; m <= ALL_MSG; m++) {
                looped(c, k, (enum form)f, (enum mode)m, loop, tight, res, &rc);
                ns[f][m] += looped(c, k, (enum form)f, (enum mode)m, loop, tight, res, &rc);
            }
        }
        valid += rc == REIN_OK;
        invalid += rc == REIN_EINVALID;
    }
    printf("%.3f %.3f %.3f %.3f %.3f %.3f %.3f %.3f %zu %zu\n", ns[0][0], ns[0][1], ns[0][2],
           ns[0][3], ns[1][0], ns[1][1], ns[1][2], ns[1][3], valid, invalid);
}

static int serve(const struct bcase *cases, size_t n)
{
    rein_schema_result *res = rein_schema_result_new();
    static const char *const modes[] = {"verdict", "counted", "first", "all"};
    char line[256], what[16], form[16], mode[16];

    while (fgets(line, sizeof(line), stdin)) {
        double arg;
        size_t i;
        int loop, got;
        memcpy(form, "tree", 5);
        if ((got = sscanf(line, "cycle %15s %lf %15s", what, &arg, form)) >= 2 &&
            (!strcmp(form, "tree") || !strcmp(form, "doc") || !strcmp(form, "text"))) {
            cycle(cases, n, strcmp(what, "first") ? 0 : REIN_SCHEMA_FIRST_ERROR,
                  form[1] == 'r'   ? TREE
                  : form[0] == 'd' ? DOC
                                   : TEXT,
                  arg, res);
        } else if (sscanf(line, "loop %zu %d %15s %15s", &i, &loop, form, mode) == 4 && i < n &&
                   loop > 0 && (!strcmp(form, "tree") || !strcmp(form, "doc"))) {
            int m = 0;
            while (m < 4 && strcmp(modes[m], mode))
                m++;
            if (m == 4) {
                fprintf(stderr, "schema_bench: bad mode: %s", line);
                return 2;
            }
            loop_one(&cases[i], loop, form[0] == 't' ? TREE : DOC, (enum mode)m, res);
        } else if (sscanf(line, "%15s %zu %d", what, &i, &loop) == 3 && i < n && loop > 0 &&
                   (!strcmp(what, "loop") || !strcmp(what, "tight"))) {
            loop_case(&cases[i], loop, what[0] == 't', res);
        } else {
            fprintf(stderr, "schema_bench: bad command: %s", line);
            return 2;
        }
        fflush(stdout);
    }
    rein_schema_result_free(res);
    return 0;
}

int main(int argc, char **argv)
{
    rein_error err;
    json_t *doc;
    struct bcase *cases;
    size_t n;
    int rc;

    if (argc != 2) {
        fprintf(stderr, "usage: schema_bench CASES.json (commands on stdin)\n");
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
        /* The driver numbers the cases as the file does: a schema rein cannot compile is an
         * error of the benchmark, not a case to skip. */
        cases[i].schema = rein_schema_compile(json_object_get(c, "schema"), NULL, &err);
        if (!cases[i].schema) {
            fprintf(stderr, "schema_bench: %s: %s\n", json_string_value(json_object_get(c, "name")),
                    err.msg);
            return 2;
        }
        cases[i].instances = json_object_get(c, "instances");
        cases[i].texts = json_object_get(c, "texts");
        cases[i].docs = calloc(json_array_size(cases[i].instances) + 1, sizeof(rein_doc *));
        if (json_array_size(cases[i].texts) != json_array_size(cases[i].instances)) {
            fprintf(stderr, "schema_bench: %s: a text is needed for every instance\n",
                    json_string_value(json_object_get(c, "name")));
            return 2;
        }
        for (size_t k = 0; k < json_array_size(cases[i].texts); k++) {
            json_t *t = json_array_get(cases[i].texts, k);
            cases[i].docs[k] = rein_doc_parse(json_string_value(t), json_string_length(t), &err);
            if (!cases[i].docs[k]) {
                fprintf(stderr, "schema_bench: %s: %s\n",
                        json_string_value(json_object_get(c, "name")), err.msg);
                return 2;
            }
        }
    }
    printf("ready %zu\n", n);
    fflush(stdout);
    rc = serve(cases, n);
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < json_array_size(cases[i].instances); k++)
            rein_doc_free(cases[i].docs[k]);
        free(cases[i].docs);
        rein_schema_free(cases[i].schema);
    }
    free(cases);
    json_decref(doc);
    return rc;
}
