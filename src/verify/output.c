/*
 * Readers of the output of build, lint and test tools: CTest, cmocka, pytest, Jest, Vitest,
 * TAP (raw streams, `prove`'s summary, `node --test`'s closing counts), JUnit XML (junit.c),
 * gcc/clang (and ld) diagnostics, ESLint (`-f json` and the stylish summary), and the
 * coverage totals tools print (coverage.c). They were checked against the real tools' output
 * kept in tests/data/verify_outputs/.
 *
 * The output is read as a stream (rein_verify_output_feed), so a run that prints a million
 * results is read in bounded memory: the bytes are cleaned on the way (ANSI colours removed,
 * "\r\n" and lone '\r' made '\n'), cut into lines, and every line goes to every reader the
 * format selects. A line reader either recognises its tool's summary or stays silent; it
 * never guesses from a single ambiguous line. Each reader keeps its own counts and its own
 * capped list of what failed (output_int.h), so every result is counted and at most
 * REIN__DIAG_MAX are described. In auto mode the test counts come from the first test format
 * that matched, in the order JUnit, CTest, Jest, Vitest, pytest, TAP, cmocka (CTest before
 * the line formats because `ctest --output-on-failure` repeats the cmocka output of its
 * failed tests), and the diagnostic counts are the sum of gcc's and ESLint's. ESLint's JSON
 * report is one long line: it is split into its per-file objects as the bytes arrive, and
 * each object is parsed alone.
 */
#include "output_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ESLINT_ENTRY_MAX ((size_t)4 << 20) /* bytes of one file's object in ESLint's JSON */

struct lints {
    bool found;
    int64_t errors, warnings;
};

static const char *skip_ws(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

static void rtrim(char *s)
{
    size_t n = strlen(s);

    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = '\0';
}

/* Reads a non-negative decimal number at *s; false when there is none. */
static bool read_num(const char **s, int64_t *out)
{
    const char *p = *s;
    int64_t v = 0;

    if (*p < '0' || *p > '9')
        return false;
    while (*p >= '0' && *p <= '9') {
        if (v < ((int64_t)1 << 50))
            v = v * 10 + (*p - '0');
        p++;
    }
    *s = p;
    *out = v;
    return true;
}

static bool starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* ---- diagnostics ---- */

void rein__diag_set_str(struct rein__diags *d, json_t *o, const char *key, const char *s, size_t n)
{
    json_t *v;

    if (!o || !s || d->oom)
        return;
    if (n > REIN__DIAG_MSG_MAX)
        n = REIN__DIAG_MSG_MAX;
    /* Cut at a character boundary so the text stays valid UTF-8. */
    while (n && n < strlen(s) && ((unsigned char)s[n] & 0xc0) == 0x80)
        n--;
    v = json_stringn(s, n);
    if (!v)
        v = json_string("(not UTF-8)");
    if (!v || json_object_set_new(o, key, v))
        d->oom = true;
}

void rein__diag_set_int(struct rein__diags *d, json_t *o, const char *key, int64_t v)
{
    if (o && !d->oom && v > 0 && json_object_set_new(o, key, json_integer(v)))
        d->oom = true;
}

json_t *rein__diag_new(struct rein__diags *d, const char *severity)
{
    json_t *o;

    if (!d->arr || d->oom || json_array_size(d->arr) >= (d->max ? d->max : REIN__DIAG_MAX))
        return NULL;
    o = json_object();
    if (!o || json_array_append_new(d->arr, o)) {
        d->oom = true;
        return NULL;
    }
    rein__diag_set_str(d, o, "severity", severity, strlen(severity));
    return o;
}

void rein__diag_test(struct rein__diags *d, const char *name, size_t n, const char *msg)
{
    json_t *o;
    size_t i;
    json_t *item;

    if (!d->arr || n == 0)
        return;
    /* A failing test is often named twice (as it fails and in the summary). */
    json_array_foreach(d->arr, i, item)
    {
        const char *t = json_string_value(json_object_get(item, "test"));
        if (t && strlen(t) == n && memcmp(t, name, n) == 0)
            return;
    }
    o = rein__diag_new(d, "failure");
    rein__diag_set_str(d, o, "test", name, n);
    if (msg && *msg)
        rein__diag_set_str(d, o, "message", msg, strlen(msg));
}

/* ---- CTest ---- */

struct ctest {
    struct rein__tests t;
    struct rein__diags d;
    enum { CT_NONE, CT_FAILED_LIST, CT_NOT_RUN_LIST } section;
    int64_t disabled;
};

/* "  2 - math.sub (Failed)" → name; false when the line is not such an entry. */
static bool ctest_entry(const char *s, const char **name, size_t *n, const char **status)
{
    int64_t num;
    const char *open;

    s = skip_ws(s);
    if (!read_num(&s, &num) || !starts(s, " - "))
        return false;
    s += 3;
    open = strrchr(s, '(');
    if (!open || open == s || open[-1] != ' ' || s[strlen(s) - 1] != ')')
        return false;
    *name = s;
    *n = (size_t)(open - 1 - s);
    *status = open + 1;
    return true;
}

static void ctest_line(struct ctest *c, const char *s)
{
    const char *p, *name, *status;
    int64_t pct, failed, total;
    size_t n;

    if (c->section != CT_NONE && ctest_entry(s, &name, &n, &status)) {
        if (c->section == CT_FAILED_LIST) {
            char st[64];
            snprintf(st, sizeof(st), "%.*s", (int)strcspn(status, ")"), status);
            rein__diag_test(&c->d, name, n, st);
        } else if (starts(status, "Skipped")) {
            c->t.skipped++;
        } else if (starts(status, "Disabled")) {
            /* "x% tests passed, N tests failed out of M": M leaves disabled tests out. */
            c->t.skipped++;
            c->disabled++;
        }
        return;
    }
    c->section = CT_NONE;
    if (strcmp(s, "The following tests FAILED:") == 0) {
        c->section = CT_FAILED_LIST;
    } else if (strcmp(s, "The following tests did not run:") == 0) {
        c->section = CT_NOT_RUN_LIST;
    } else if (starts(s, "No tests were found")) {
        c->t.found = true;
    } else if ((p = strstr(s, "% tests passed, ")) && p > s) {
        const char *q = p;
        while (q > s && q[-1] >= '0' && q[-1] <= '9')
            q--;
        if (!read_num(&q, &pct))
            return;
        p += strlen("% tests passed, ");
        if (!read_num(&p, &failed) || !starts(p, " tests failed out of "))
            return;
        p += strlen(" tests failed out of ");
        if (!read_num(&p, &total))
            return;
        c->t.found = true;
        c->t.failed += failed;
        c->t.total += total;
    }
}

static void ctest_finish(struct ctest *c)
{
    /* CTest counts skipped tests among the passed ones in its percentage. */
    c->t.total += c->disabled;
    c->t.passed = c->t.total - c->t.failed - c->t.skipped;
    if (c->t.passed < 0)
        c->t.passed = 0;
}

/* ---- cmocka ---- */

struct cmocka {
    struct rein__tests t;
    struct rein__diags d;
    char last_error[REIN__DIAG_MSG_MAX + 1];
};

/* "[  FAILED  ] 1 test(s), listed below:" → 1; "[  FAILED  ] tests: 2 test(s)…" → 2. */
static bool cmocka_count(const char *rest, int64_t *out)
{
    const char *p = strstr(rest, " test(s)");
    const char *q;

    if (!p)
        return false;
    q = p;
    while (q > rest && q[-1] >= '0' && q[-1] <= '9')
        q--;
    return q < p && read_num(&q, out);
}

static void cmocka_line(struct cmocka *c, const char *s)
{
    int64_t n;

    if (starts(s, "[==========] ") && strstr(s, " test(s) run.") && cmocka_count(s, &n)) {
        c->t.found = true;
        c->t.total += n;
    } else if (starts(s, "[  PASSED  ] ") && cmocka_count(s, &n)) {
        c->t.passed += n;
    } else if (starts(s, "[  SKIPPED ] ") && cmocka_count(s, &n)) {
        c->t.skipped += n;
    } else if (starts(s, "[  FAILED  ] ") && strstr(s, " test(s)") && cmocka_count(s, &n)) {
        c->t.failed += n;
    } else if (starts(s, "[  FAILED  ] ") && !strchr(s + 13, ' ')) {
        rein__diag_test(&c->d, s + 13, strlen(s + 13), c->last_error);
    } else if (starts(s, "[  ERROR   ] --- ")) {
        snprintf(c->last_error, sizeof(c->last_error), "%.*s", (int)sizeof(c->last_error) - 1,
                 s + 17);
    } else if (starts(s, "[ RUN      ] ")) {
        c->last_error[0] = '\0';
    }
}

/* ---- pytest ---- */

struct pytest {
    struct rein__tests t;
    struct rein__diags d;
};

static bool pytest_summary(const char *s, struct rein__tests *t)
{
    struct rein__tests c = {0};
    int known = 0;
    const char *in;

    while (*s == '=' || *s == ' ')
        s++;
    in = strstr(s, " in ");
    if (!in)
        return false;
    if (starts(s, "no tests ran")) {
        t->found = true;
        return true;
    }
    while (s < in) {
        int64_t n;
        const char *word;
        size_t wn;
        if (!read_num(&s, &n) || *s != ' ')
            return false;
        word = ++s;
        while (s < in && *s != ',')
            s++;
        wn = (size_t)(s - word);
#define IS(w) (wn == strlen(w) && strncmp(word, w, wn) == 0)
        if (IS("passed") || IS("xpassed"))
            c.passed += n;
        else if (IS("failed") || IS("error") || IS("errors"))
            c.failed += n;
        else if (IS("skipped") || IS("xfailed"))
            c.skipped += n;
        /* Deselected tests (-k, -m) were filtered out, like tests ctest -R leaves out. */
        else if (!IS("warning") && !IS("warnings") && !IS("rerun") && !IS("deselected"))
            return false;
#undef IS
        known++;
        if (*s == ',')
            s += 2;
    }
    /* The time: "0.02s", "12.31s (0:00:12)". */
    s = in + 4;
    while ((*s >= '0' && *s <= '9') || *s == '.')
        s++;
    if (!known || *s != 's')
        return false;
    t->found = true;
    t->passed += c.passed;
    t->failed += c.failed;
    t->skipped += c.skipped;
    t->total += c.passed + c.failed + c.skipped;
    return true;
}

static void pytest_line(struct pytest *p, const char *s)
{
    if (starts(s, "FAILED ") || starts(s, "ERROR ")) {
        const char *name = s + (s[0] == 'F' ? 7 : 6), *dash = strstr(name, " - ");
        rein__diag_test(&p->d, name, dash ? (size_t)(dash - name) : strlen(name),
                        dash ? dash + 3 : "");
    } else if (((s[0] >= '0' && s[0] <= '9') || s[0] == '=' || starts(s, "no tests ran")) &&
               strstr(s, " in ")) {
        pytest_summary(s, &p->t);
    }
}

/* ---- Jest and Vitest ---- */

/* Reads "N word" items separated by sep until the end (or '('), adding to t. */
static bool count_items(const char *s, char sep, struct rein__tests *t, int64_t *total)
{
    bool any = false;

    while (*s && *s != '(') {
        int64_t n;
        const char *word;
        size_t wn;
        s = skip_ws(s);
        if (!read_num(&s, &n) || *s != ' ')
            return any;
        word = ++s;
        while (*s && *s != sep && *s != ' ' && *s != '(')
            s++;
        wn = (size_t)(s - word);
        if (wn == 6 && strncmp(word, "passed", 6) == 0)
            t->passed += n;
        else if (wn == 6 && strncmp(word, "failed", 6) == 0)
            t->failed += n;
        else if ((wn == 7 && strncmp(word, "skipped", 7) == 0) ||
                 (wn == 4 && strncmp(word, "todo", 4) == 0) ||
                 (wn == 7 && strncmp(word, "pending", 7) == 0))
            t->skipped += n;
        else if (wn == 5 && strncmp(word, "total", 5) == 0)
            *total += n;
        any = true;
        s = skip_ws(s);
        if (*s == sep)
            s++;
    }
    if (*s == '(') {
        int64_t n;
        s++;
        if (read_num(&s, &n) && *s == ')')
            *total += n;
    }
    return any;
}

struct jest {
    struct rein__tests t, suites;
    struct rein__diags d;
    int64_t total, stotal, unloaded;
    bool recap;
    char suite[REIN__LINE_MAX];
};

/* "FAIL src/a.test.js" or "FAIL  src/a.test.js (5.1 s)": remembers the suite's path. */
static void jest_suite(const char *s, char *suite, size_t size)
{
    size_t n;

    s = skip_ws(s + 4);
    n = strcspn(s, " ");
    snprintf(suite, size, "%.*s", (int)n, s);
}

static void jest_line(struct jest *j, const char *s)
{
    const char *name;

    if (starts(s, "Tests:")) {
        j->t.found |= count_items(s + 6, ',', &j->t, &j->total);
    } else if (starts(s, "Test Suites:")) {
        count_items(s + 12, ',', &j->suites, &j->stotal);
    } else if (strcmp(s, "Summary of all failing tests") == 0) {
        j->recap = true; /* what follows repeats the failures above */
    } else if (starts(s, "FAIL ")) {
        jest_suite(s, j->suite, sizeof(j->suite));
    } else if (!starts(skip_ws(s), "\xe2\x97\x8f ")) {
        return;
    } else if (strcmp(name = skip_ws(s) + 4, "Test suite failed to run") == 0) {
        /* A suite that cannot even load has no test in "Tests:": it is named by path. */
        j->unloaded += j->recap ? 0 : 1;
        rein__diag_test(&j->d, j->suite[0] ? j->suite : name, strlen(j->suite[0] ? j->suite : name),
                        name);
    } else if (s[0] == ' ' && !starts(name, "Console")) {
        rein__diag_test(&j->d, name, strlen(name), NULL);
    }
}

static void jest_finish(struct jest *j)
{
    j->t.total = j->total + j->unloaded;
    j->t.failed += j->unloaded;
    /* The suites' count also catches a failure to load whose message was not shown. */
    if (j->t.found && j->suites.failed > 0 && j->t.failed == 0) {
        j->t.failed = j->suites.failed;
        j->t.total += j->suites.failed;
    }
}

struct vitest {
    struct rein__tests t, files;
    struct rein__diags d;
    int64_t total, ftotal, unloaded;
    bool files_seen, no_tests;
};

/* "⎯⎯⎯ Failed Suites 2 ⎯⎯⎯": how many test files failed to load (or in a hook). */
static bool vitest_failed_suites(const char *s, int64_t *n)
{
    const char *p = strstr(s, " Failed Suites ");

    if (!p || !starts(s, "\xe2\x8e\xaf"))
        return false;
    p += strlen(" Failed Suites ");
    return read_num(&p, n);
}

static void vitest_line(struct vitest *v, const char *s)
{
    const char *br;
    int64_t n;

    s = skip_ws(s);
    if (starts(s, "Tests  ") && strchr(s, '(')) {
        v->t.found |= count_items(s + 7, '|', &v->t, &v->total);
    } else if (strcmp(s, "Tests  no tests") == 0) {
        v->no_tests = true; /* every file failed to load, or none has a test */
    } else if (starts(s, "Test Files  ")) {
        v->files_seen |= count_items(s + 12, '|', &v->files, &v->ftotal);
    } else if (vitest_failed_suites(s, &n)) {
        v->unloaded += n;
    } else if (starts(s, "FAIL  ") && strstr(s, " > ")) {
        rein__diag_test(&v->d, s + 6, strlen(s + 6), NULL);
    } else if (starts(s, "FAIL  ") && (br = strstr(s + 6, " [ "))) {
        rein__diag_test(&v->d, s + 6, (size_t)(br - (s + 6)), "failed to run");
    }
}

static void vitest_finish(struct vitest *v)
{
    v->t.found |= v->no_tests && v->files_seen;
    /* A file that fails to load is one failure that "Tests" does not count. */
    v->t.failed += v->unloaded;
    v->t.total = v->total + v->unloaded;
    if (v->t.found && v->files.failed > 0 && v->t.failed == 0) {
        v->t.failed = v->files.failed;
        v->t.total += v->files.failed;
    }
}

/* ---- TAP ---- */

/* What a TAP stream says: its own lines, Node's closing counts, prove's summary. */
struct tap {
    struct rein__tests t;
    struct rein__diags d;
    bool tap, bail;
    int64_t plan, seen, failed, skipped;
    size_t fail_mark; /* diagnostics before the last "not ok" added one; SIZE_MAX: none */
    /* The YAML block after a "not ok" ("  ---" … "  ..."): its message (or Node's error)
     * describes the failure. yaml_diag is the diagnostic it belongs to, SIZE_MAX: none. */
    size_t yaml_diag;
    bool in_yaml, yaml_block; /* inside the block; the message is a block scalar (|, >) */
    /* "# tests 7" … from `node --test` (also "ℹ tests 7" from its spec reporter). */
    unsigned trailer; /* bits of the words seen, in the order of trailer_words */
    int64_t tr[6];
    /* prove: "Files=3, Tests=9, …", "t/a.t (Wstat: 512 … Tests: 6 Failed: 2)" */
    bool prove;
    int64_t p_tests, p_failed, p_missing, p_skipped, p_bail, p_skipped_files;
};

static const char *const trailer_words[] = {"tests",     "pass",    "fail",
                                            "cancelled", "skipped", "todo"};

/* "# pass 3" or "ℹ pass 3" (Node's spec reporter) after the last test. */
static bool tap_trailer(const char *s, struct tap *tp)
{
    if (starts(s, "# "))
        s += 2;
    else if (starts(s, "\xe2\x84\xb9 "))
        s += 4;
    else
        return false;
    for (size_t i = 0; i < 6; i++) {
        size_t n = strlen(trailer_words[i]);
        const char *p = s + n + 1;
        int64_t v;
        if (strncmp(s, trailer_words[i], n) == 0 && s[n] == ' ' && read_num(&p, &v) && !*p) {
            tp->trailer |= 1u << i;
            tp->tr[i] += v;
            return true;
        }
    }
    return false;
}

/* "ok 3 - name # SKIP why" at any depth; only the top level (depth 0) is counted. */
static void tap_result(const char *s, bool ok, bool top, struct tap *tp)
{
    const char *p = s + (ok ? 2 : 6), *hash, *name;
    int64_t num;
    size_t before;

    tp->yaml_diag = SIZE_MAX; /* a YAML block after this result is not a failure's */
    if (*p != '\0' && *p != ' ')
        return;
    hash = strchr(p, '#');
    if (hash && (rein__verify_has_prefix_ci(skip_ws(hash + 1), "skip") ||
                 rein__verify_has_prefix_ci(skip_ws(hash + 1), "todo"))) {
        tp->skipped += top;
        tp->seen += top;
        return;
    }
    tp->seen += top;
    if (ok)
        return;
    tp->failed += top;
    p = skip_ws(p);
    read_num(&p, &num);
    name = skip_ws(p);
    if (*name == '-')
        name = skip_ws(name + 1);
    before = tp->d.arr ? json_array_size(tp->d.arr) : 0;
    rein__diag_test(&tp->d, name, hash ? (size_t)(hash - name) : strlen(name), NULL);
    tp->fail_mark = tp->d.arr && json_array_size(tp->d.arr) > before ? before : SIZE_MAX;
    tp->yaml_diag = tp->fail_mark;
}

/* A line of the YAML block after a failure: "message: 'expected 2'" (TAP 13's convention),
 * or Node's "error: |-" with the text on the next line, becomes the failure's message. */
static void tap_yaml(struct tap *tp, const char *ts)
{
    json_t *d = json_array_get(tp->d.arr, tp->yaml_diag);
    const char *v = NULL;
    size_t n;

    if (strcmp(ts, "...") == 0) {
        tp->in_yaml = false;
        tp->yaml_diag = SIZE_MAX;
        return;
    }
    if (!d || json_object_get(d, "message"))
        return;
    if (tp->yaml_block) {
        v = ts;
        tp->yaml_block = false;
    } else if (starts(ts, "message:") || starts(ts, "error:")) {
        v = skip_ws(strchr(ts, ':') + 1);
        if (*v == '|' || *v == '>') {
            tp->yaml_block = true;
            return;
        }
    }
    if (!v || !*v)
        return;
    n = strlen(v);
    if (n >= 2 && (v[0] == '\'' || v[0] == '"') && v[n - 1] == v[0]) {
        v++;
        n -= 2;
    }
    rein__diag_set_str(&tp->d, d, "message", v, n);
}

/* Reads "<label>N" after s's first occurrence of label; false when absent. */
static bool num_after(const char *s, const char *label, int64_t *out)
{
    const char *p = strstr(s, label);

    if (!p)
        return false;
    p += strlen(label);
    return read_num(&p, out);
}

/* prove's own lines (not the TAP it runs); true when the line was one. */
static bool tap_prove(const char *s, struct tap *tp)
{
    int64_t a, b;
    const char *p;

    if (starts(s, "Files=") && num_after(s, ", Tests=", &a)) {
        tp->prove = true;
        tp->p_tests += a;
    } else if ((p = strstr(s, " (Wstat: ")) && num_after(p, " Failed: ", &a)) {
        tp->p_failed += a;
        rein__diag_test(&tp->d, s, (size_t)(p - s), NULL);
    } else if (starts(skip_ws(s), "Parse errors: Bad plan.") && num_after(s, "You planned ", &a) &&
               num_after(s, " tests but ran ", &b)) {
        tp->p_missing += a > b ? a - b : 0;
    } else if (starts(s, "Bailout called.")) {
        tp->p_bail++;
    } else if (num_after(s, "(less ", &a) && strstr(s, " skipped subtest")) {
        tp->p_skipped += a;
    } else if (strstr(s, " .. skipped")) {
        tp->p_skipped_files++;
    } else {
        return false;
    }
    return true;
}

static void tap_line(struct tap *tp, const char *s)
{
    const char *ts = skip_ws(s);
    bool top = ts == s, ok;

    if (tp->in_yaml && (starts(ts, "ok") || starts(ts, "not ok") || starts(ts, "1..") ||
                        starts(ts, "Bail out!"))) {
        tp->in_yaml = tp->yaml_block = false; /* a block without its "...": results go on */
    } else if (tp->in_yaml) {
        tap_yaml(tp, ts);
        if (tp->in_yaml && strcmp(ts, "failureType: 'subtestsFailed'") != 0)
            return;
    } else if (!top && strcmp(ts, "---") == 0 && tp->yaml_diag != SIZE_MAX) {
        tp->in_yaml = true;
        return;
    }
    if (top && starts(s, "TAP version ")) {
        tp->tap = true;
    } else if (top && starts(s, "1..")) {
        const char *p = s + 3;
        int64_t n;
        /* One plan per stream; prove -v prints one stream per test file. */
        if (read_num(&p, &n) && (*p == '\0' || *p == ' ')) {
            tp->tap = true;
            tp->plan += n;
        }
    } else if (top && starts(s, "Bail out!")) {
        tp->bail = true;
    } else if ((ok = starts(ts, "ok")) || starts(ts, "not ok")) {
        tap_result(ts, ok, top, tp);
    } else if (strcmp(ts, "failureType: 'subtestsFailed'") == 0 && tp->fail_mark != SIZE_MAX) {
        /* Node's suite that failed only because a test in it failed: that test is named. */
        while (tp->d.arr && json_array_size(tp->d.arr) > tp->fail_mark)
            json_array_remove(tp->d.arr, json_array_size(tp->d.arr) - 1);
        tp->fail_mark = tp->yaml_diag = SIZE_MAX;
    } else if (!top || !tap_trailer(s, tp)) {
        tap_prove(s, tp); /* some of prove's summary lines are indented */
    }
}

static void tap_finish(struct tap *tp)
{
    struct rein__tests *t = &tp->t;

    if (tp->prove) {
        /* prove's summary covers every file, also those whose TAP it did not print. */
        t->total = tp->p_tests + tp->p_missing + tp->p_skipped_files + tp->p_bail;
        t->failed = tp->p_failed + tp->p_missing + tp->p_bail;
        t->skipped =
            (tp->skipped > tp->p_skipped ? tp->skipped : tp->p_skipped) + tp->p_skipped_files;
    } else if ((tp->trailer & 3u) == 3u && (tp->tap || tp->trailer == 63u)) {
        /* Node counts every test at any depth; the TAP lines show only the top level. */
        t->total = tp->tr[0];
        t->failed = tp->tr[2] + tp->tr[3];
        t->skipped = tp->tr[4] + tp->tr[5];
    } else if (tp->tap) {
        int64_t missing = tp->plan > tp->seen ? tp->plan - tp->seen : 0;
        /* Planned tests that never reported failed; a bail out before any is planned is
         * one failure of its own. */
        if (tp->bail && missing == 0)
            missing = 1;
        t->total = tp->seen + missing;
        t->failed = tp->failed + missing;
        t->skipped = tp->skipped;
    } else {
        return;
    }
    t->passed = t->total - t->failed - t->skipped;
    if (t->passed < 0)
        t->passed = 0;
    t->found = true;
}

/* ---- gcc and clang ---- */

struct gcc {
    struct lints l;
    struct rein__diags d;
};

static bool gcc_severity(const char *s, const char **sev, const char **msg)
{
    static const char *const sevs[] = {"fatal error: ", "error: ", "warning: "};

    for (size_t i = 0; i < 3; i++) {
        if (starts(s, sevs[i])) {
            *sev = i < 2 ? "error" : "warning";
            *msg = s + strlen(sevs[i]);
            return true;
        }
    }
    return false;
}

static void gcc_diag(struct rein__diags *d, const char *sev, const char *file, size_t fn,
                     int64_t line, int64_t col, const char *msg)
{
    json_t *o = rein__diag_new(d, sev);
    const char *rule = NULL;
    size_t mn = strlen(msg);

    if (!o)
        return;
    /* "… [-Wunused-variable]" or "[-Werror=unused-variable]" names the rule. */
    if (mn > 4 && msg[mn - 1] == ']') {
        const char *open = strrchr(msg, '[');
        if (open && open > msg && open[-1] == ' ' && open[1] == '-') {
            rule = open + 1;
            rein__diag_set_str(d, o, "rule", rule, (size_t)(msg + mn - 1 - rule));
            mn = (size_t)(open - 1 - msg);
        }
    }
    rein__diag_set_str(d, o, "file", file, fn);
    rein__diag_set_int(d, o, "line", line);
    rein__diag_set_int(d, o, "column", col);
    rein__diag_set_str(d, o, "message", msg, mn);
}

/* "/usr/bin/ld: cannot find -lfoo: No such file or directory" (GNU ld, gold, lld). */
static bool linker_error(const char *s, struct gcc *g)
{
    const char *p = strstr(s, ": cannot find ");
    const char *prog = p;

    if (!p)
        return false;
    while (prog > s && prog[-1] != '/')
        prog--;
    if (!starts(prog, "ld") && !strstr(prog, "-ld") && !starts(prog, "ld.lld"))
        return false;
    if (strchr(prog, ' ') && strchr(prog, ' ') < p)
        return false;
    g->l.errors++;
    gcc_diag(&g->d, "error", NULL, 0, 0, 0, p + 2);
    return true;
}

static bool gcc_line(struct gcc *g, const char *s)
{
    const char *p = s, *sev, *msg, *what;
    int64_t line = 0, col = 0;
    size_t fn;

    if (linker_error(s, g))
        return true;
    what = strstr(s, "undefined reference to `");
    if (!what)
        what = strstr(s, "multiple definition of `");
    if (what) {
        g->l.errors++;
        gcc_diag(&g->d, "error", NULL, 0, 0, 0, what);
        return true;
    }
    while (*p && *p != ':' && *p != ' ' && *p != '\t')
        p++;
    if (*p != ':' || p == s)
        return false;
    fn = (size_t)(p - s);
    p++;
    if (read_num(&p, &line)) {
        if (*p++ != ':')
            return false;
        if (read_num(&p, &col) && *p++ != ':')
            return false;
    }
    if (*p++ != ' ' || !gcc_severity(p, &sev, &msg))
        return false;
    /* collect2's "ld returned 1 exit status" and clang's "linker command failed" repeat
     * the linker's errors above them. */
    if ((fn == 8 && strncmp(s, "collect2", 8) == 0) || starts(msg, "linker command failed"))
        return false;
    if (sev[0] == 'e')
        g->l.errors++;
    else
        g->l.warnings++;
    gcc_diag(&g->d, sev, s, fn, line, col, msg);
    return true;
}

/* ---- ESLint: the stylish report ---- */

struct stylish {
    struct lints l;
    struct rein__diags d;
    char file[REIN__LINE_MAX];
};

/* "  3:7  error  'x' is assigned a value but never used  no-unused-vars" */
static void stylish_message(struct stylish *st, const char *p, int64_t ln, int64_t col)
{
    const char *sev, *gap = NULL;
    json_t *o;

    p = skip_ws(p);
    sev = starts(p, "error") ? "error" : starts(p, "warning") ? "warning" : NULL;
    if (!sev)
        return;
    o = rein__diag_new(&st->d, sev);
    if (!o)
        return;
    p = skip_ws(p + strlen(sev));
    rein__diag_set_str(&st->d, o, "file", st->file, strlen(st->file));
    rein__diag_set_int(&st->d, o, "line", ln);
    rein__diag_set_int(&st->d, o, "column", col);
    /* The rule is the last word after two or more spaces. */
    for (const char *q = p; *q; q++)
        if (q[0] == ' ' && q[1] == ' ')
            gap = q;
    if (gap) {
        rein__diag_set_str(&st->d, o, "message", p, (size_t)(gap - p));
        gap = skip_ws(gap);
        rein__diag_set_str(&st->d, o, "rule", gap, strlen(gap));
    } else {
        rein__diag_set_str(&st->d, o, "message", p, strlen(p));
    }
}

/* "✖ 5 problems (3 errors, 2 warnings)" closes the report. */
static void stylish_line(struct stylish *st, const char *s)
{
    const char *p;
    int64_t problems, errors, warnings, ln, col;

    if (starts(s, "\xe2\x9c\x96 ")) {
        p = s + 4;
        if (!read_num(&p, &problems) || !(p = strstr(p, " (")))
            return;
        p += 2;
        if (!read_num(&p, &errors) || !(p = strstr(p, ", ")))
            return;
        p += 2;
        if (!read_num(&p, &warnings))
            return;
        st->l.found = true;
        st->l.errors += errors;
        st->l.warnings += warnings;
    } else if (s[0] == '/' || (s[0] && s[0] != ' ' && strchr(s, '.') && !strchr(s, ' '))) {
        snprintf(st->file, sizeof(st->file), "%s", s);
    } else if (s[0] == ' ') {
        p = skip_ws(s);
        if (read_num(&p, &ln) && *p == ':') {
            p++;
            if (read_num(&p, &col))
                stylish_message(st, p, ln, col);
        }
    }
}

/* ---- ESLint: the JSON report, split into its per-file objects as it streams ---- */

enum ej_state { EJ_SEARCH, EJ_ARRAY, EJ_ENTRY, EJ_DONE, EJ_FAILED };

struct ejson {
    struct lints l;
    struct rein__diags d;
    bool strict; /* the step says eslint: "[" at a line start opens the report, even "[]" */
    enum ej_state state;
    char win[16]; /* the last bytes seen while searching, for `[{"filePath":` */
    size_t wn;
    bool line_start;
    int depth;
    bool in_str, esc;
    struct rein_buf entry; /* the current file's object */
};

static const char ejson_open[] = "[{\"filePath\":";

static void eslint_entry(struct ejson *e, const json_t *file)
{
    const char *path = json_string_value(json_object_get(file, "filePath"));
    json_t *messages = json_object_get(file, "messages"), *m;
    size_t i;

    e->l.errors += json_integer_value(json_object_get(file, "errorCount"));
    e->l.warnings += json_integer_value(json_object_get(file, "warningCount"));
    json_array_foreach(messages, i, m)
    {
        int64_t sev = json_integer_value(json_object_get(m, "severity"));
        const char *msg = json_string_value(json_object_get(m, "message"));
        const char *rule = json_string_value(json_object_get(m, "ruleId"));
        json_t *o;
        if (sev < 1)
            continue;
        o = rein__diag_new(&e->d, sev >= 2 ? "error" : "warning");
        if (!o)
            break;
        rein__diag_set_str(&e->d, o, "file", path, path ? strlen(path) : 0);
        rein__diag_set_int(&e->d, o, "line", json_integer_value(json_object_get(m, "line")));
        rein__diag_set_int(&e->d, o, "column", json_integer_value(json_object_get(m, "column")));
        rein__diag_set_str(&e->d, o, "message", msg, msg ? strlen(msg) : 0);
        rein__diag_set_str(&e->d, o, "rule", rule, rule ? strlen(rule) : 0);
    }
}

/* One file's object is complete: parse it alone. */
static void ejson_entry_done(struct ejson *e)
{
    json_error_t jerr;
    json_t *file;

    rein__verify_utf8_fix(e->entry.ptr, e->entry.len);
    file = json_loadb(e->entry.ptr, e->entry.len, 0, &jerr);
    rein_buf_reset(&e->entry);
    e->state = EJ_ARRAY;
    if (!json_is_object(file)) {
        if (!file && strstr(jerr.text, "memory"))
            e->d.oom = true;
        e->state = EJ_FAILED;
    } else {
        eslint_entry(e, file);
    }
    json_decref(file);
}

static void ejson_begin_entry(struct ejson *e, const char *head, size_t n)
{
    rein_buf_reset(&e->entry);
    e->state = EJ_ENTRY;
    e->depth = 1;
    e->in_str = e->esc = false;
    if (rein_buf_add(&e->entry, head, n))
        e->state = EJ_FAILED;
}

static void ejson_byte(struct ejson *e, char c)
{
    switch (e->state) {
    case EJ_SEARCH:
        if (e->strict) {
            if (e->line_start && c == '[')
                e->state = EJ_ARRAY;
        } else {
            if (e->wn == sizeof(ejson_open) - 1) {
                memmove(e->win, e->win + 1, e->wn - 1);
                e->wn--;
            }
            e->win[e->wn++] = c;
            if (e->wn == sizeof(ejson_open) - 1 && memcmp(e->win, ejson_open, e->wn) == 0)
                ejson_begin_entry(e, ejson_open + 1, sizeof(ejson_open) - 2);
        }
        e->line_start = c == '\n';
        return;
    case EJ_ARRAY:
        if (c == ']')
            e->state = EJ_DONE;
        else if (c == '{')
            ejson_begin_entry(e, "{", 1);
        else if (c != ',' && c != ' ' && c != '\n' && c != '\t')
            e->state = EJ_FAILED;
        return;
    case EJ_ENTRY:
        /* rein_buf_addch fails past its maximum: an entry that large is not read. */
        if (rein_buf_addch(&e->entry, c)) {
            e->state = EJ_FAILED;
            return;
        }
        if (e->in_str) {
            if (e->esc)
                e->esc = false;
            else if (c == '\\')
                e->esc = true;
            else if (c == '"')
                e->in_str = false;
        } else if (c == '"') {
            e->in_str = true;
        } else if (c == '{' || c == '[') {
            e->depth++;
        } else if ((c == '}' || c == ']') && --e->depth == 0) {
            ejson_entry_done(e);
        }
        return;
    case EJ_DONE:
    case EJ_FAILED:
        return;
    }
}

/* ---- the stream ---- */

enum clean_state { CL_TEXT, CL_ESC, CL_CSI, CL_OSC, CL_OSC_ESC };

struct rein_verify_output {
    enum rein_verify_format fmt;
    bool want_diags;
    bool oom;
    enum clean_state cs;
    bool pending_cr;
    char line[REIN__LINE_MAX];
    size_t line_len;
    /* JUnit XML: a document starts at a line whose first non-blank bytes are "<?xml" or
     * "<testsuite"; until then the first bytes of each line wait in head. */
    char head[16];
    size_t head_len;
    bool junit_on;
    struct rein__junit *junit;
    struct ctest ctest;
    struct cmocka cmocka;
    struct pytest pytest;
    struct jest jest;
    struct vitest vitest;
    struct tap tap;
    struct gcc gcc;
    struct stylish stylish;
    struct ejson ejson;
    struct rein__cov_lines cov;
};

static bool wants(const struct rein_verify_output *o, enum rein_verify_format f)
{
    return o->fmt == REIN_VERIFY_FORMAT_AUTO || o->fmt == f;
}

static void dispatch_line(struct rein_verify_output *o, char *s)
{
    rein__verify_utf8_fix(s, strlen(s));
    rtrim(s);
    if (wants(o, REIN_VERIFY_FORMAT_CTEST))
        ctest_line(&o->ctest, s);
    if (wants(o, REIN_VERIFY_FORMAT_CMOCKA))
        cmocka_line(&o->cmocka, s);
    if (wants(o, REIN_VERIFY_FORMAT_PYTEST))
        pytest_line(&o->pytest, s);
    if (wants(o, REIN_VERIFY_FORMAT_JEST))
        jest_line(&o->jest, s);
    if (wants(o, REIN_VERIFY_FORMAT_VITEST))
        vitest_line(&o->vitest, s);
    if (wants(o, REIN_VERIFY_FORMAT_TAP))
        tap_line(&o->tap, s);
    if (wants(o, REIN_VERIFY_FORMAT_GCC) && gcc_line(&o->gcc, s))
        o->gcc.l.found = true;
    if (wants(o, REIN_VERIFY_FORMAT_ESLINT))
        stylish_line(&o->stylish, s);
    if (o->fmt != REIN_VERIFY_FORMAT_NONE)
        rein__coverage_line(&o->cov, s);
}

/* The JUnit reader sees raw cleaned bytes once a document has started. */
static void junit_byte(struct rein_verify_output *o, char c)
{
    const char *h;

    if (o->junit_on) {
        rein__junit_feed(o->junit, &c, 1);
        return;
    }
    if (o->head_len == SIZE_MAX) { /* this line cannot start a document */
        if (c == '\n')
            o->head_len = 0;
        return;
    }
    if (o->head_len == 0 && (c == ' ' || c == '\t'))
        return;
    o->head[o->head_len++] = c;
    h = o->head;
    if ((o->head_len == 5 && memcmp(h, "<?xml", 5) == 0) ||
        (o->head_len == 10 && memcmp(h, "<testsuite", 10) == 0)) {
        o->junit_on = true;
        rein__junit_feed(o->junit, h, o->head_len);
        o->head_len = 0;
        return;
    }
    /* Still a prefix of one of the two openings? */
    if ((o->head_len <= 5 && memcmp(h, "<?xml", o->head_len) == 0) ||
        (o->head_len <= 10 && memcmp(h, "<testsuite", o->head_len) == 0))
        return;
    o->head_len = c == '\n' ? 0 : SIZE_MAX;
}

/* One cleaned byte. */
static void put(struct rein_verify_output *o, char c)
{
    if (o->junit)
        junit_byte(o, c);
    if (wants(o, REIN_VERIFY_FORMAT_ESLINT))
        ejson_byte(&o->ejson, c);
    if (c == '\n') {
        o->line[o->line_len] = '\0';
        dispatch_line(o, o->line);
        o->line_len = 0;
        return;
    }
    /* A longer line is cut: the line readers look at its start. */
    if (o->line_len < sizeof(o->line) - 1)
        o->line[o->line_len++] = c ? c : ' ';
}

rein_verify_output *rein_verify_output_new(enum rein_verify_format fmt, bool want_diagnostics)
{
    rein_verify_output *o = rein_calloc(1, sizeof(*o));
    struct rein__diags *all[9];
    size_t n = 0;

    if (!o)
        return NULL;
    o->fmt = fmt;
    o->want_diags = want_diagnostics;
    o->tap.fail_mark = SIZE_MAX;
    o->tap.yaml_diag = SIZE_MAX;
    o->ejson.strict = fmt == REIN_VERIFY_FORMAT_ESLINT;
    o->ejson.line_start = true;
    rein_buf_init(&o->ejson.entry, ESLINT_ENTRY_MAX);
    all[n++] = &o->ctest.d;
    all[n++] = &o->cmocka.d;
    all[n++] = &o->pytest.d;
    all[n++] = &o->jest.d;
    all[n++] = &o->vitest.d;
    all[n++] = &o->tap.d;
    all[n++] = &o->gcc.d;
    all[n++] = &o->stylish.d;
    all[n++] = &o->ejson.d;
    for (size_t i = 0; want_diagnostics && i < n; i++) {
        all[i]->arr = json_array();
        if (!all[i]->arr)
            goto fail;
    }
    if (wants(o, REIN_VERIFY_FORMAT_JUNIT) && fmt != REIN_VERIFY_FORMAT_NONE) {
        o->junit = rein__junit_new(want_diagnostics);
        if (!o->junit)
            goto fail;
    }
    return o;
fail:
    rein_verify_output_free(o);
    return NULL;
}

void rein_verify_output_free(rein_verify_output *o)
{
    if (!o)
        return;
    json_decref(o->ctest.d.arr);
    json_decref(o->cmocka.d.arr);
    json_decref(o->pytest.d.arr);
    json_decref(o->jest.d.arr);
    json_decref(o->vitest.d.arr);
    json_decref(o->tap.d.arr);
    json_decref(o->gcc.d.arr);
    json_decref(o->stylish.d.arr);
    json_decref(o->ejson.d.arr);
    rein_buf_release(&o->ejson.entry);
    rein__junit_free(o->junit);
    rein_free(o);
}

void rein_verify_output_feed(rein_verify_output *o, const char *data, size_t len)
{
    const unsigned char *p = (const unsigned char *)data;

    if (o->fmt == REIN_VERIFY_FORMAT_NONE)
        return;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = p[i];
        switch (o->cs) {
        case CL_ESC:
            o->cs = c == '[' ? CL_CSI : c == ']' ? CL_OSC : CL_TEXT;
            continue;
        case CL_CSI: /* parameters and intermediates, then one final byte */
            if (c >= 0x40 && c <= 0x7e)
                o->cs = CL_TEXT;
            continue;
        case CL_OSC: /* ends with BEL or ESC \ */
            o->cs = c == 0x07 ? CL_TEXT : c == 0x1b ? CL_OSC_ESC : CL_OSC;
            continue;
        case CL_OSC_ESC:
            o->cs = c == '\\' || c == 0x07 ? CL_TEXT : c == 0x1b ? CL_OSC_ESC : CL_OSC;
            continue;
        case CL_TEXT:
            break;
        }
        if (o->pending_cr) {
            o->pending_cr = false;
            put(o, '\n');
            if (c == '\n')
                continue;
        }
        if (c == 0x1b)
            o->cs = CL_ESC;
        else if (c == '\r')
            o->pending_cr = true;
        else
            put(o, (char)c);
    }
}

static void add_format(struct rein_verify_counts *c, const char *name)
{
    size_t n = strlen(c->format);

    snprintf(c->format + n, sizeof(c->format) - n, "%s%s", n ? "+" : "", name);
}

/* Appends what src holds (up to the list's cap) to dst, which may be NULL. */
static bool take_diags(json_t *dst, const json_t *src)
{
    size_t i;
    json_t *d;

    if (!dst)
        return true;
    json_array_foreach(src, i, d)
    {
        if (json_array_size(dst) >= REIN__DIAG_MAX)
            break;
        if (json_array_append(dst, d))
            return false;
    }
    return true;
}

static void finish_lints(rein_verify_output *o, struct rein_verify_counts *c, json_t *diags,
                         bool *ok)
{
    struct lints *eslint = NULL;
    const json_t *ediags = NULL;

    if (o->gcc.l.found) {
        c->has_diagnostics = true;
        c->errors += o->gcc.l.errors;
        c->warnings += o->gcc.l.warnings;
        add_format(c, "gcc");
        *ok &= take_diags(diags, o->gcc.d.arr);
    }
    /* ESLint's JSON report, else its stylish one (whose messages count only with its
     * summary line). */
    if (o->ejson.state == EJ_DONE) {
        eslint = &o->ejson.l;
        ediags = o->ejson.d.arr;
    } else if (o->stylish.l.found) {
        eslint = &o->stylish.l;
        ediags = o->stylish.d.arr;
    }
    if (eslint) {
        c->has_diagnostics = true;
        c->errors += eslint->errors;
        c->warnings += eslint->warnings;
        add_format(c, "eslint");
        *ok &= take_diags(diags, ediags);
    }
}

static void finish_tests(rein_verify_output *o, struct rein_verify_counts *c, json_t *diags,
                         bool *ok)
{
    struct rein__tests junit = {0};
    json_t *jdiags = NULL;
    const struct {
        enum rein_verify_format fmt;
        const struct rein__tests *t;
        const json_t *d;
    } order[] = {
        {REIN_VERIFY_FORMAT_JUNIT, &junit, NULL},
        {REIN_VERIFY_FORMAT_CTEST, &o->ctest.t, o->ctest.d.arr},
        {REIN_VERIFY_FORMAT_JEST, &o->jest.t, o->jest.d.arr},
        {REIN_VERIFY_FORMAT_VITEST, &o->vitest.t, o->vitest.d.arr},
        {REIN_VERIFY_FORMAT_PYTEST, &o->pytest.t, o->pytest.d.arr},
        {REIN_VERIFY_FORMAT_TAP, &o->tap.t, o->tap.d.arr},
        {REIN_VERIFY_FORMAT_CMOCKA, &o->cmocka.t, o->cmocka.d.arr},
    };

    ctest_finish(&o->ctest);
    jest_finish(&o->jest);
    vitest_finish(&o->vitest);
    tap_finish(&o->tap);
    if (o->junit && !rein__junit_finish(o->junit, &junit, o->want_diags ? &jdiags : NULL))
        *ok = false;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(order); i++) {
        const struct rein__tests *t = order[i].t;
        if (!wants(o, order[i].fmt) || !t->found)
            continue;
        c->has_tests = true;
        c->passed = t->passed;
        c->failed = t->failed;
        c->skipped = t->skipped;
        c->total = t->total;
        add_format(c, rein_verify_format_name(order[i].fmt));
        *ok &= take_diags(diags, i == 0 ? jdiags : order[i].d);
        break;
    }
    json_decref(jdiags);
}

rein_err rein_verify_output_finish(rein_verify_output *o, struct rein_verify_counts *counts,
                                   json_t **diagnostics, rein_error *err)
{
    json_t *diags = NULL;
    bool ok = true;

    memset(counts, 0, sizeof(*counts));
    if (diagnostics)
        *diagnostics = NULL;
    if (o->fmt == REIN_VERIFY_FORMAT_NONE)
        return REIN_OK;
    if (o->pending_cr || o->line_len) {
        o->pending_cr = false;
        put(o, '\n');
    }
    if (o->want_diags && diagnostics) {
        diags = json_array();
        ok = diags != NULL;
    }
    if (ok)
        finish_lints(o, counts, diags, &ok);
    if (ok)
        finish_tests(o, counts, diags, &ok);
    if (o->cov.found) {
        counts->has_coverage = true;
        counts->coverage = o->cov.percent;
    }
    ok &= !o->ctest.d.oom && !o->cmocka.d.oom && !o->pytest.d.oom && !o->jest.d.oom &&
          !o->vitest.d.oom && !o->tap.d.oom && !o->gcc.d.oom && !o->stylish.d.oom &&
          !o->ejson.d.oom;
    if (!ok) {
        json_decref(diags);
        memset(counts, 0, sizeof(*counts));
        return rein_error_set(err, REIN_ENOMEM, "out of memory parsing output");
    }
    if (diagnostics)
        *diagnostics = diags;
    else
        json_decref(diags);
    return REIN_OK;
}

rein_err rein_verify_output_parse(const char *text, size_t len, enum rein_verify_format fmt,
                                  struct rein_verify_counts *counts, json_t **diagnostics,
                                  rein_error *err)
{
    rein_verify_output *o;
    rein_err rc;

    memset(counts, 0, sizeof(*counts));
    if (diagnostics)
        *diagnostics = NULL;
    if (fmt == REIN_VERIFY_FORMAT_NONE)
        return REIN_OK;
    o = rein_verify_output_new(fmt, diagnostics != NULL);
    if (!o)
        return rein_error_set(err, REIN_ENOMEM, "out of memory parsing output");
    rein_verify_output_feed(o, text, len);
    rc = rein_verify_output_finish(o, counts, diagnostics, err);
    rein_verify_output_free(o);
    return rc;
}
