/*
 * The official JSON-Schema-Test-Suite run against rein's validator: every file of
 * tests/draft2020-12/ and tests/draft7/ (optional/ and optional/format/ too), with the
 * documents of remotes/ registered under http://localhost:1234/ as the suite's README asks.
 *
 * Each dialect is one test. It prints "file: passed/total" for every file and the totals, and
 * fails when any required test fails or when an optional test fails that is not listed as
 * skipped (tests/integration/test_schema_conformance.SKIPPED.md says why each is skipped).
 * Files in optional/format/ run with format assertions on; the rest with format as an
 * annotation. The suite is read in place from the shared folder; without it each test exits 77
 * (skipped).
 *
 * Every test also compares the verdicts of the ways rein decides: the node walker alone
 * (every error), the first-error mode without a result (the verdict program,
 * src/schema/verdict.c) and with one, and the number of errors the program counts with the
 * walker's. Any disagreement fails the test, also on tests whose expected answer is skipped.
 *
 * Run build-test/tests/test_schema_conformance directly to see the counts.
 */
/* rein-test-timeout: 300 */
#include "test.h"

#include <dirent.h>

#include "schema/schema_int.h"
#include "schema_same.h"
#include <sys/stat.h>

#define SUITE "conformance/json-schema-test-suite"

/* Optional tests rein does not pass, by dialect, file (relative to tests/<dialect>/) and
 * test-group description (NULL: the whole file). Keep in step with the SKIPPED file. */
static const struct skip {
    const char *dialect;
    const char *file;
    const char *group;
} skips[] = {
    {NULL, "optional/format/idn-hostname.json", NULL},
    {NULL, "optional/format/hostname.json", "validation of A-label (punycode) host names"},
    {NULL, "optional/format/ecmascript-regex.json",
     "ECMA 262 lookbehind is valid, including variable width"},
};

struct counts {
    int passed, total, skipped;
};

struct run {
    const char *dialect;
    rein_schema_registry *reg;
    struct counts required, optional;
    int unexpected; /* failures not allowed */
    int disagree;   /* verdicts of the walker and the first-error modes that differ */
};

/* True when the first-error verdicts (with and without a result) equal the walker's (rc). */
static bool modes_agree(const rein_schema *schema, json_t *data, rein_err rc,
                        rein_schema_result *res)
{
    rein_err fast = rein_schema_validate(schema, data, REIN_SCHEMA_FIRST_ERROR, NULL, NULL);
    rein_err first = rein_schema_validate(schema, data, REIN_SCHEMA_FIRST_ERROR, res, NULL);
    rein_err all = rein_schema_validate(schema, data, 0, NULL, NULL);
    rein_error counted, walked;

    if (rc != REIN_OK && rc != REIN_EINVALID)
        return true; /* a hard error: no verdict to compare */
    /* All errors counted without a result: the number must be the walker's. */
    if (rein_schema_validate(schema, data, 0, NULL, &counted) != rc ||
        rein__schema_walk(schema, data, 0, NULL, &walked) != rc ||
        (rc == REIN_EINVALID && strcmp(counted.msg, walked.msg) != 0))
        return false;
    return fast == rc && first == rc && all == rc;
}

static bool skipped(const char *dialect, const char *file, const char *group)
{
    for (size_t i = 0; i < sizeof(skips) / sizeof(skips[0]); i++) {
        if (skips[i].dialect && strcmp(skips[i].dialect, dialect) != 0)
            continue;
        if (strcmp(skips[i].file, file) != 0)
            continue;
        if (!skips[i].group || (group && strcmp(skips[i].group, group) == 0))
            return true;
    }
    return false;
}

static json_t *load_json(const char *path)
{
    size_t len;
    char *text = test_read_file(path, &len);
    rein_error err;
    json_t *v;

    if (!text)
        return NULL;
    v = rein_json_parse(text, len, 0, &err);
    if (!v) /* bignum tests hold integers beyond 64 bits: read those as doubles */
        v = rein_json_parse(text, len, JSON_DECODE_INT_AS_REAL, &err);
    free(text);
    return v;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names of entries of dir that are files ending in .json (dirs false) or folders. */
static size_t list_dir(const char *dir, bool dirs, char ***out)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char **names = NULL;
    size_t n = 0;

    *out = NULL;
    if (!d)
        return 0;
    while ((e = readdir(d))) {
        char path[4096];
        struct stat st;
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (stat(path, &st) != 0 || (bool)S_ISDIR(st.st_mode) != dirs)
            continue;
        if (!dirs && !strstr(e->d_name, ".json"))
            continue;
        names = realloc(names, (n + 1) * sizeof(*names));
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof(*names), cmp_str);
    *out = names;
    return n;
}

static void free_list(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

static void register_remotes(rein_schema_registry *reg, const char *dir, const char *rel)
{
    char **names;
    size_t n = list_dir(dir, false, &names);

    for (size_t i = 0; i < n; i++) {
        char path[4096], uri[4096];
        rein_error err;
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        snprintf(uri, sizeof(uri), "http://localhost:1234/%s%s", rel, names[i]);
        json_t *doc = load_json(path);
        assert_non_null(doc);
        if (rein_schema_registry_add(reg, uri, doc, &err))
            print_message("remote %s not registered: %s\n", uri, err.msg);
        json_decref(doc);
    }
    free_list(names, n);
    n = list_dir(dir, true, &names);
    for (size_t i = 0; i < n; i++) {
        char sub[4096], subrel[4096];
        /* remotes/v1/ holds documents of the next, unreleased dialect, which no test of
         * draft2020-12 or draft7 refers to. */
        if (!*rel && strcmp(names[i], "v1") == 0)
            continue;
        snprintf(sub, sizeof(sub), "%s/%s", dir, names[i]);
        snprintf(subrel, sizeof(subrel), "%s%s/", rel, names[i]);
        register_remotes(reg, sub, subrel);
    }
    free_list(names, n);
}

static void run_file(struct run *r, const char *path, const char *rel)
{
    json_t *groups = load_json(path);
    bool optional = strncmp(rel, "optional/", 9) == 0;
    bool formats = strncmp(rel, "optional/format/", 16) == 0 ||
                   (strcmp(r->dialect, "draft7") == 0 && strcmp(rel, "optional/content.json") == 0);
    struct counts *sum = optional ? &r->optional : &r->required;
    struct counts file = {0};
    rein_schema_result *res = rein_schema_result_new();
    size_t gi;
    json_t *g;

    assert_non_null(groups);
    json_array_foreach(groups, gi, g)
    {
        const char *gdesc = json_string_value(json_object_get(g, "description"));
        json_t *tests = json_object_get(g, "tests");
        struct rein_schema_options opts = {0};
        rein_error err;
        rein_schema *schema;
        size_t ti;
        json_t *t;
        bool skip = skipped(r->dialect, rel, gdesc);

        opts.dialect = strcmp(r->dialect, "draft7") == 0 ? REIN_SCHEMA_DIALECT_DRAFT7
                                                         : REIN_SCHEMA_DIALECT_2020_12;
        opts.format_assert = formats;
        opts.registry = r->reg;
        schema = rein_schema_compile(json_object_get(g, "schema"), &opts, &err);
        if (!schema && !skip)
            print_message("  %s: \"%s\": schema does not compile: %s\n", rel, gdesc, err.msg);
        json_array_foreach(tests, ti, t)
        {
            bool want = json_is_true(json_object_get(t, "valid"));
            bool got = false;
            rein_err rc = REIN_EINVALID;

            file.total++;
            if (schema) {
                json_t *data = json_object_get(t, "data");
                rc = rein__schema_walk(schema, data, 0, res, &err);
                got = rc == REIN_OK;
                if (rein_schema_validate(schema, data, 0, res, &err) != rc ||
                    !modes_agree(schema, data, rc, res)) {
                    r->disagree++;
                    print_message("  DISAGREE %s: \"%s\" / \"%s\": the modes' verdicts differ\n",
                                  rel, gdesc, json_string_value(json_object_get(t, "description")));
                }
                /* The errors recorded along the verdict program are the walker's. */
                for (int f = 0; f < 2; f++) {
                    char why[512];
                    if (test_schema_same_errors(schema, data, f ? REIN_SCHEMA_FIRST_ERROR : 0, why,
                                                sizeof(why)))
                        continue;
                    r->disagree++;
                    print_message("  DISAGREE %s: \"%s\" / \"%s\": errors differ: %s\n", rel, gdesc,
                                  json_string_value(json_object_get(t, "description")), why);
                }
                /* A document validated in rein's compact form answers as its tree does. */
                for (int f = 0; f < 2; f++) {
                    char why[512];
                    if (test_schema_same_doc(schema, data, f ? REIN_SCHEMA_FIRST_ERROR : 0, why,
                                             sizeof(why)))
                        continue;
                    r->disagree++;
                    print_message("  DISAGREE %s: \"%s\" / \"%s\": the document differs: %s\n", rel,
                                  gdesc, json_string_value(json_object_get(t, "description")), why);
                }
            }
            if (schema && (rc == REIN_OK || rc == REIN_EINVALID) && got == want) {
                file.passed++;
                continue;
            }
            if (skip) {
                file.skipped++;
                continue;
            }
            r->unexpected++;
            print_message("  FAIL %s: \"%s\" / \"%s\": expected %s, got %s%s%s\n", rel, gdesc,
                          json_string_value(json_object_get(t, "description")),
                          want ? "valid" : "invalid", rein_err_name(rc),
                          rc != REIN_OK && rc != REIN_EINVALID ? ": " : "",
                          rc != REIN_OK && rc != REIN_EINVALID ? err.msg : "");
        }
        rein_schema_free(schema);
    }
    rein_schema_result_free(res);
    json_decref(groups);
    print_message("%s/%s: %d/%d%s\n", r->dialect, rel, file.passed, file.total,
                  file.skipped ? " (rest skipped)" : "");
    sum->passed += file.passed;
    sum->total += file.total;
    sum->skipped += file.skipped;
}

static void run_dir(struct run *r, const char *dir, const char *rel)
{
    char **names;
    size_t n = list_dir(dir, false, &names);

    for (size_t i = 0; i < n; i++) {
        char path[4096], frel[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        snprintf(frel, sizeof(frel), "%s%s", rel, names[i]);
        run_file(r, path, frel);
    }
    free_list(names, n);
}

static void run_dialect(const char *dialect)
{
    const char *suite = test_shared_path(SUITE);
    char dir[4096];
    struct run r = {0};
    struct stat st;

    /* Without the suite there is nothing to run: exit 77, which CTest reports as skipped. */
    if (!test_shared_dir() || stat(suite, &st) != 0) {
        print_message("[  SKIPPED ] %s is absent\n", SUITE);
        exit(77);
    }

    r.dialect = dialect;
    r.reg = rein_schema_registry_new();
    assert_non_null(r.reg);
    snprintf(dir, sizeof(dir), "%s/remotes", suite);
    register_remotes(r.reg, dir, "");
    snprintf(dir, sizeof(dir), "%s/tests/%s", suite, dialect);
    run_dir(&r, dir, "");
    snprintf(dir, sizeof(dir), "%s/tests/%s/optional", suite, dialect);
    run_dir(&r, dir, "optional/");
    snprintf(dir, sizeof(dir), "%s/tests/%s/optional/format", suite, dialect);
    run_dir(&r, dir, "optional/format/");
    rein_schema_registry_free(r.reg);
    print_message("%s: required %d/%d passed; optional %d/%d passed, %d skipped\n", dialect,
                  r.required.passed, r.required.total, r.optional.passed, r.optional.total,
                  r.optional.skipped);
    print_message("%s: %d passed, %d failed, %d skipped\n", dialect,
                  r.required.passed + r.optional.passed, r.unexpected, r.optional.skipped);
    assert_int_equal(r.unexpected, 0);
    assert_int_equal(r.disagree, 0);
    assert_int_equal(r.required.passed, r.required.total);
}

static void conformance_draft2020_12(void **state)
{
    (void)state;
    run_dialect("draft2020-12");
}

static void conformance_draft7(void **state)
{
    (void)state;
    run_dialect("draft7");
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(conformance_draft2020_12),
    cmocka_unit_test(conformance_draft7),
};

REIN_TEST_MAIN(tests)
