/*
 * Parsers for the output of build, lint and test tools: CTest, cmocka, pytest, Jest,
 * Vitest, TAP (raw streams, `prove`'s summary, `node --test`'s closing counts), gcc/clang
 * (and ld) diagnostics, ESLint (`-f json` and the stylish summary). They were checked
 * against the real tools' output kept in tests/data/verify_outputs/.
 *
 * Each parser reads the cleaned output (no ANSI colours, '\n' line ends) line by line and
 * either recognises its tool's summary or stays silent; a parser never guesses from a
 * single ambiguous line. In auto mode every parser runs: the test counts come from the
 * first test format that matched, in the order CTest, Jest, Vitest, pytest, TAP, cmocka
 * (CTest first because `ctest --output-on-failure` repeats the cmocka output of its failed
 * tests), and the diagnostic counts are the sum of gcc and ESLint's. What failed is
 * collected as diagnostics, which later name the failure in its signature.
 */
#include "verify_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIAG_MAX     50
#define DIAG_MSG_MAX 300
#define LINE_MAX_LEN 4096

struct line {
    const char *p;
    size_t n;
};

struct diags {
    json_t *arr; /* NULL when the caller does not want them */
    bool oom;
};

struct tests {
    bool found;
    int64_t passed, failed, skipped, total;
};

struct lints {
    bool found;
    int64_t errors, warnings;
};

/* Iterates over the lines of text; false at the end. */
static bool next_line(const char *text, size_t len, size_t *pos, struct line *l)
{
    const char *nl;

    if (*pos >= len)
        return false;
    l->p = text + *pos;
    nl = memchr(l->p, '\n', len - *pos);
    l->n = nl ? (size_t)(nl - l->p) : len - *pos;
    *pos += l->n + (nl ? 1 : 0);
    return true;
}

/* Copies a line into a NUL-terminated buffer (cut at LINE_MAX_LEN - 1). */
static const char *line_str(const struct line *l, char buf[LINE_MAX_LEN])
{
    size_t n = l->n < LINE_MAX_LEN - 1 ? l->n : LINE_MAX_LEN - 1;

    memcpy(buf, l->p, n);
    buf[n] = '\0';
    return buf;
}

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

static void set_str(struct diags *d, json_t *o, const char *key, const char *s, size_t n)
{
    json_t *v;

    if (!s || d->oom)
        return;
    if (n > DIAG_MSG_MAX)
        n = DIAG_MSG_MAX;
    /* Cut at a character boundary so the text stays valid UTF-8. */
    while (n && n < strlen(s) && ((unsigned char)s[n] & 0xc0) == 0x80)
        n--;
    v = json_stringn(s, n);
    if (!v)
        v = json_string("(not UTF-8)");
    if (!v || json_object_set_new(o, key, v))
        d->oom = true;
}

static void set_int(struct diags *d, json_t *o, const char *key, int64_t v)
{
    if (!d->oom && v > 0 && json_object_set_new(o, key, json_integer(v)))
        d->oom = true;
}

/* A new diagnostic object appended to d, or NULL when full, unwanted or out of memory. */
static json_t *diag_new(struct diags *d, const char *severity)
{
    json_t *o;

    if (!d->arr || d->oom || json_array_size(d->arr) >= DIAG_MAX)
        return NULL;
    o = json_object();
    if (!o || json_array_append_new(d->arr, o)) {
        d->oom = true;
        return NULL;
    }
    set_str(d, o, "severity", severity, strlen(severity));
    return o;
}

static void diag_test(struct diags *d, const char *name, size_t n, const char *msg)
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
    o = diag_new(d, "failure");
    set_str(d, o, "test", name, n);
    if (o && msg && *msg)
        set_str(d, o, "message", msg, strlen(msg));
}

/* ---- CTest ---- */

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

static bool parse_ctest(const char *text, size_t len, struct tests *t, struct diags *d)
{
    enum { NONE, FAILED_LIST, NOT_RUN_LIST } section = NONE;
    int64_t disabled = 0;
    char buf[LINE_MAX_LEN];
    size_t pos = 0;
    struct line l;

    while (next_line(text, len, &pos, &l)) {
        const char *s = line_str(&l, buf), *p, *name, *status;
        int64_t pct, failed, total;
        size_t n;

        rtrim(buf);
        if (section != NONE && ctest_entry(s, &name, &n, &status)) {
            if (section == FAILED_LIST) {
                char st[64];
                snprintf(st, sizeof(st), "%.*s", (int)strcspn(status, ")"), status);
                diag_test(d, name, n, st);
            } else if (starts(status, "Skipped")) {
                t->skipped++;
            } else if (starts(status, "Disabled")) {
                /* "x% tests passed, N tests failed out of M": M leaves disabled tests out. */
                t->skipped++;
                disabled++;
            }
            continue;
        }
        section = NONE;
        if (strcmp(s, "The following tests FAILED:") == 0) {
            section = FAILED_LIST;
        } else if (strcmp(s, "The following tests did not run:") == 0) {
            section = NOT_RUN_LIST;
        } else if (starts(s, "No tests were found")) {
            t->found = true;
        } else if ((p = strstr(s, "% tests passed, ")) && p > s) {
            const char *q = p;
            while (q > s && q[-1] >= '0' && q[-1] <= '9')
                q--;
            if (!read_num(&q, &pct))
                continue;
            p += strlen("% tests passed, ");
            if (!read_num(&p, &failed) || !starts(p, " tests failed out of ") ||
                (p += strlen(" tests failed out of "), !read_num(&p, &total)))
                continue;
            t->found = true;
            t->failed += failed;
            t->total += total;
        }
    }
    /* CTest counts skipped tests among the passed ones in its percentage. */
    t->total += disabled;
    t->passed = t->total - t->failed - t->skipped;
    if (t->passed < 0)
        t->passed = 0;
    return t->found;
}

/* ---- cmocka ---- */

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

static bool parse_cmocka(const char *text, size_t len, struct tests *t, struct diags *d)
{
    char buf[LINE_MAX_LEN], last_error[DIAG_MSG_MAX + 1] = "";
    size_t pos = 0;
    struct line l;

    while (next_line(text, len, &pos, &l)) {
        const char *s = line_str(&l, buf);
        int64_t n;

        rtrim(buf);
        if (starts(s, "[==========] ") && strstr(s, " test(s) run.") && cmocka_count(s, &n)) {
            t->found = true;
            t->total += n;
        } else if (starts(s, "[  PASSED  ] ") && cmocka_count(s, &n)) {
            t->passed += n;
        } else if (starts(s, "[  SKIPPED ] ") && cmocka_count(s, &n)) {
            t->skipped += n;
        } else if (starts(s, "[  FAILED  ] ") && strstr(s, " test(s)") && cmocka_count(s, &n)) {
            t->failed += n;
        } else if (starts(s, "[  FAILED  ] ") && !strchr(s + 13, ' ')) {
            diag_test(d, s + 13, strlen(s + 13), last_error);
        } else if (starts(s, "[  ERROR   ] --- ")) {
            snprintf(last_error, sizeof(last_error), "%.*s", (int)sizeof(last_error) - 1, s + 17);
        } else if (starts(s, "[ RUN      ] ")) {
            last_error[0] = '\0';
        }
    }
    return t->found;
}

/* ---- pytest ---- */

static bool pytest_summary(const char *s, struct tests *t)
{
    struct tests c = {0};
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

static bool parse_pytest(const char *text, size_t len, struct tests *t, struct diags *d)
{
    char buf[LINE_MAX_LEN];
    size_t pos = 0;
    struct line l;

    while (next_line(text, len, &pos, &l)) {
        const char *s = line_str(&l, buf), *dash;
        rtrim(buf);
        if (starts(s, "FAILED ") || starts(s, "ERROR ")) {
            const char *name = s + (s[0] == 'F' ? 7 : 6);
            dash = strstr(name, " - ");
            diag_test(d, name, dash ? (size_t)(dash - name) : strlen(name), dash ? dash + 3 : "");
        } else if (((s[0] >= '0' && s[0] <= '9') || s[0] == '=' || starts(s, "no tests ran")) &&
                   strstr(s, " in ")) {
            pytest_summary(s, t);
        }
    }
    return t->found;
}

/* ---- Jest and Vitest ---- */

/* Reads "N word" items separated by sep until the end (or '('), adding to t. */
static bool count_items(const char *s, char sep, struct tests *t, int64_t *total)
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

/* "FAIL src/a.test.js" or "FAIL  src/a.test.js (5.1 s)": remembers the suite's path. */
static void jest_suite(const char *s, char *suite, size_t size)
{
    size_t n;

    s = skip_ws(s + 4);
    n = strcspn(s, " ");
    snprintf(suite, size, "%.*s", (int)n, s);
}

static bool parse_jest(const char *text, size_t len, struct tests *t, struct diags *d)
{
    struct tests suites = {0};
    int64_t total = 0, stotal = 0, unloaded = 0;
    bool recap = false;
    char buf[LINE_MAX_LEN], suite[LINE_MAX_LEN] = "";
    size_t pos = 0;
    struct line l;

    while (next_line(text, len, &pos, &l)) {
        const char *s = line_str(&l, buf), *name;
        rtrim(buf);
        if (starts(s, "Tests:")) {
            t->found |= count_items(s + 6, ',', t, &total);
        } else if (starts(s, "Test Suites:")) {
            count_items(s + 12, ',', &suites, &stotal);
        } else if (strcmp(s, "Summary of all failing tests") == 0) {
            recap = true; /* what follows repeats the failures above */
        } else if (starts(s, "FAIL ")) {
            jest_suite(s, suite, sizeof(suite));
        } else if (!starts(skip_ws(s), "\xe2\x97\x8f ")) {
            continue;
        } else if (strcmp(name = skip_ws(s) + 4, "Test suite failed to run") == 0) {
            /* A suite that cannot even load has no test in "Tests:": it is named by path. */
            unloaded += recap ? 0 : 1;
            diag_test(d, suite[0] ? suite : name, strlen(suite[0] ? suite : name), name);
        } else if (s[0] == ' ' && !starts(name, "Console")) {
            diag_test(d, name, strlen(name), NULL);
        }
    }
    t->total = total + unloaded;
    t->failed += unloaded;
    /* The suites' count also catches a failure to load whose message was not shown. */
    if (t->found && suites.failed > 0 && t->failed == 0) {
        t->failed = suites.failed;
        t->total += suites.failed;
    }
    return t->found;
}

/* "⎯⎯⎯ Failed Suites 2 ⎯⎯⎯": how many test files failed to load (or in a hook). */
static bool vitest_failed_suites(const char *s, int64_t *n)
{
    const char *p = strstr(s, " Failed Suites ");

    if (!p || !starts(s, "\xe2\x8e\xaf"))
        return false;
    p += strlen(" Failed Suites ");
    return read_num(&p, n);
}

static bool parse_vitest(const char *text, size_t len, struct tests *t, struct diags *d)
{
    struct tests files = {0};
    int64_t total = 0, ftotal = 0, unloaded = 0, n;
    bool files_seen = false, no_tests = false;
    char buf[LINE_MAX_LEN];
    size_t pos = 0;
    struct line l;

    while (next_line(text, len, &pos, &l)) {
        const char *s = skip_ws(line_str(&l, buf)), *br;
        rtrim(buf);
        if (starts(s, "Tests  ") && strchr(s, '(')) {
            t->found |= count_items(s + 7, '|', t, &total);
        } else if (strcmp(s, "Tests  no tests") == 0) {
            no_tests = true; /* every file failed to load, or none has a test */
        } else if (starts(s, "Test Files  ")) {
            files_seen |= count_items(s + 12, '|', &files, &ftotal);
        } else if (vitest_failed_suites(s, &n)) {
            unloaded += n;
        } else if (starts(s, "FAIL  ") && strstr(s, " > ")) {
            diag_test(d, s + 6, strlen(s + 6), NULL);
        } else if (starts(s, "FAIL  ") && (br = strstr(s + 6, " [ "))) {
            diag_test(d, s + 6, (size_t)(br - (s + 6)), "failed to run");
        }
    }
    t->found |= no_tests && files_seen;
    /* A file that fails to load is one failure that "Tests" does not count. */
    t->failed += unloaded;
    t->total = total + unloaded;
    if (t->found && files.failed > 0 && t->failed == 0) {
        t->failed = files.failed;
        t->total += files.failed;
    }
    return t->found;
}

/* ---- TAP ---- */

/* What a TAP stream says: its own lines, Node's closing counts, prove's summary. */
struct tap {
    bool tap, bail;
    int64_t plan, seen, failed, skipped;
    size_t fail_mark; /* diagnostics before the last "not ok" added one; SIZE_MAX: none */
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
static void tap_result(const char *s, bool ok, bool top, struct tap *tp, struct diags *d)
{
    const char *p = s + (ok ? 2 : 6), *hash, *name;
    int64_t num;
    size_t before;

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
    before = d->arr ? json_array_size(d->arr) : 0;
    diag_test(d, name, hash ? (size_t)(hash - name) : strlen(name), NULL);
    tp->fail_mark = d->arr && json_array_size(d->arr) > before ? before : SIZE_MAX;
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
static bool tap_prove(const char *s, struct tap *tp, struct diags *d)
{
    int64_t a, b;
    const char *p;

    if (starts(s, "Files=") && num_after(s, ", Tests=", &a)) {
        tp->prove = true;
        tp->p_tests += a;
    } else if ((p = strstr(s, " (Wstat: ")) && num_after(p, " Failed: ", &a)) {
        tp->p_failed += a;
        diag_test(d, s, (size_t)(p - s), NULL);
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

static void tap_line(const char *s, struct tap *tp, struct diags *d)
{
    const char *ts = skip_ws(s);
    bool top = ts == s, ok;

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
        tap_result(ts, ok, top, tp, d);
    } else if (strcmp(ts, "failureType: 'subtestsFailed'") == 0 && tp->fail_mark != SIZE_MAX) {
        /* Node's suite that failed only because a test in it failed: that test is named. */
        while (d->arr && json_array_size(d->arr) > tp->fail_mark)
            json_array_remove(d->arr, json_array_size(d->arr) - 1);
        tp->fail_mark = SIZE_MAX;
    } else if (!top || !tap_trailer(s, tp)) {
        tap_prove(s, tp, d); /* some of prove's summary lines are indented */
    }
}

static bool parse_tap(const char *text, size_t len, struct tests *t, struct diags *d)
{
    struct tap tp = {.fail_mark = SIZE_MAX};
    char buf[LINE_MAX_LEN];
    size_t pos = 0;
    struct line l;

    while (next_line(text, len, &pos, &l)) {
        rtrim((char *)line_str(&l, buf));
        tap_line(buf, &tp, d);
    }
    if (tp.prove) {
        /* prove's summary covers every file, also those whose TAP it did not print. */
        t->total = tp.p_tests + tp.p_missing + tp.p_skipped_files + tp.p_bail;
        t->failed = tp.p_failed + tp.p_missing + tp.p_bail;
        t->skipped = (tp.skipped > tp.p_skipped ? tp.skipped : tp.p_skipped) + tp.p_skipped_files;
    } else if ((tp.trailer & 3u) == 3u && (tp.tap || tp.trailer == 63u)) {
        /* Node counts every test at any depth; the TAP lines show only the top level. */
        t->total = tp.tr[0];
        t->failed = tp.tr[2] + tp.tr[3];
        t->skipped = tp.tr[4] + tp.tr[5];
    } else if (tp.tap) {
        int64_t missing = tp.plan > tp.seen ? tp.plan - tp.seen : 0;
        /* Planned tests that never reported failed; a bail out before any is planned is
         * one failure of its own. */
        if (tp.bail && missing == 0)
            missing = 1;
        t->total = tp.seen + missing;
        t->failed = tp.failed + missing;
        t->skipped = tp.skipped;
    } else {
        return false;
    }
    t->passed = t->total - t->failed - t->skipped;
    if (t->passed < 0)
        t->passed = 0;
    t->found = true;
    return true;
}

/* ---- gcc and clang ---- */

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

static void gcc_diag(struct diags *d, const char *sev, const char *file, size_t fn, int64_t line,
                     int64_t col, const char *msg)
{
    json_t *o = diag_new(d, sev);
    const char *rule = NULL;
    size_t mn = strlen(msg);

    if (!o)
        return;
    /* "… [-Wunused-variable]" or "[-Werror=unused-variable]" names the rule. */
    if (mn > 4 && msg[mn - 1] == ']') {
        const char *open = strrchr(msg, '[');
        if (open && open > msg && open[-1] == ' ' && open[1] == '-') {
            rule = open + 1;
            set_str(d, o, "rule", rule, (size_t)(msg + mn - 1 - rule));
            mn = (size_t)(open - 1 - msg);
        }
    }
    set_str(d, o, "file", file, fn);
    set_int(d, o, "line", line);
    set_int(d, o, "column", col);
    set_str(d, o, "message", msg, mn);
}

/* "/usr/bin/ld: cannot find -lfoo: No such file or directory" (GNU ld, gold, lld). */
static bool linker_error(const char *s, struct lints *t, struct diags *d)
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
    t->errors++;
    gcc_diag(d, "error", NULL, 0, 0, 0, p + 2);
    return true;
}

static bool parse_gcc_line(const char *s, struct lints *t, struct diags *d)
{
    const char *p = s, *sev, *msg;
    int64_t line = 0, col = 0;
    size_t fn;

    if (linker_error(s, t, d))
        return true;
    if (strstr(s, "undefined reference to `") || strstr(s, "multiple definition of `")) {
        const char *what = strstr(s, "undefined reference") ? strstr(s, "undefined reference")
                                                            : strstr(s, "multiple definition");
        t->errors++;
        gcc_diag(d, "error", NULL, 0, 0, 0, what);
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
        t->errors++;
    else
        t->warnings++;
    gcc_diag(d, sev, s, fn, line, col, msg);
    return true;
}

static bool parse_gcc(const char *text, size_t len, struct lints *t, struct diags *d)
{
    char buf[LINE_MAX_LEN];
    size_t pos = 0;
    struct line l;

    while (next_line(text, len, &pos, &l)) {
        rtrim((char *)line_str(&l, buf));
        if (parse_gcc_line(buf, t, d))
            t->found = true;
    }
    return t->found;
}

/* ---- ESLint ---- */

static void eslint_entry(const json_t *file, struct lints *t, struct diags *d)
{
    const char *path = json_string_value(json_object_get(file, "filePath"));
    json_t *messages = json_object_get(file, "messages"), *m;
    size_t i;

    t->errors += json_integer_value(json_object_get(file, "errorCount"));
    t->warnings += json_integer_value(json_object_get(file, "warningCount"));
    json_array_foreach(messages, i, m)
    {
        int64_t sev = json_integer_value(json_object_get(m, "severity"));
        const char *msg = json_string_value(json_object_get(m, "message"));
        const char *rule = json_string_value(json_object_get(m, "ruleId"));
        json_t *o;
        if (sev < 1)
            continue;
        o = diag_new(d, sev >= 2 ? "error" : "warning");
        if (!o)
            continue;
        set_str(d, o, "file", path, path ? strlen(path) : 0);
        set_int(d, o, "line", json_integer_value(json_object_get(m, "line")));
        set_int(d, o, "column", json_integer_value(json_object_get(m, "column")));
        set_str(d, o, "message", msg, msg ? strlen(msg) : 0);
        set_str(d, o, "rule", rule, rule ? strlen(rule) : 0);
    }
}

static bool parse_eslint_json(const char *text, size_t len, bool strict, struct lints *t,
                              struct diags *d)
{
    const char *start = memmem(text, len, "[{\"filePath\":", 13);
    json_error_t jerr;
    json_t *arr;
    size_t i;
    json_t *file;

    /* An empty result ("[]") is only recognised when the step says its format is eslint. */
    if (!start && strict) {
        size_t pos = 0;
        struct line l;
        while (next_line(text, len, &pos, &l)) {
            if (l.n >= 2 && l.p[0] == '[') {
                start = l.p;
                break;
            }
        }
    }
    if (!start)
        return false;
    arr = json_loadb(start, len - (size_t)(start - text), JSON_DISABLE_EOF_CHECK, &jerr);
    if (!json_is_array(arr)) {
        json_decref(arr);
        if (!arr && strstr(jerr.text, "memory"))
            d->oom = true;
        return false;
    }
    json_array_foreach(arr, i, file)
    {
        if (json_is_object(file))
            eslint_entry(file, t, d);
    }
    json_decref(arr);
    t->found = true;
    return true;
}

/* "✖ 5 problems (3 errors, 2 warnings)" */
static bool parse_eslint_stylish(const char *text, size_t len, struct lints *t, struct diags *d)
{
    char buf[LINE_MAX_LEN], file[LINE_MAX_LEN] = "";
    size_t pos = 0;
    struct line l;

    while (next_line(text, len, &pos, &l)) {
        const char *s = line_str(&l, buf), *p;
        int64_t problems, errors, warnings, ln, col;
        rtrim(buf);
        if (starts(s, "\xe2\x9c\x96 ")) {
            p = s + 4;
            if (read_num(&p, &problems) && (p = strstr(p, " (")) &&
                (p += 2, read_num(&p, &errors)) && (p = strstr(p, ", ")) &&
                (p += 2, read_num(&p, &warnings))) {
                t->found = true;
                t->errors += errors;
                t->warnings += warnings;
            }
        } else if (s[0] == '/' || (s[0] && s[0] != ' ' && strchr(s, '.') && !strchr(s, ' '))) {
            snprintf(file, sizeof(file), "%s", s);
        } else if (s[0] == ' ' && (p = skip_ws(s), read_num(&p, &ln)) && *p == ':' &&
                   (p++, read_num(&p, &col))) {
            const char *sev;
            json_t *o;
            p = skip_ws(p);
            sev = starts(p, "error") ? "error" : starts(p, "warning") ? "warning" : NULL;
            if (!sev)
                continue;
            o = diag_new(d, sev);
            if (!o)
                continue;
            p = skip_ws(p + strlen(sev));
            set_str(d, o, "file", file, strlen(file));
            set_int(d, o, "line", ln);
            set_int(d, o, "column", col);
            /* The rule is the last word after two or more spaces. */
            {
                const char *gap = NULL;
                for (const char *q = p; *q; q++)
                    if (q[0] == ' ' && q[1] == ' ')
                        gap = q;
                if (gap) {
                    set_str(d, o, "message", p, (size_t)(gap - p));
                    gap = skip_ws(gap);
                    set_str(d, o, "rule", gap, strlen(gap));
                } else {
                    set_str(d, o, "message", p, strlen(p));
                }
            }
        }
    }
    return t->found;
}

static bool parse_eslint(const char *text, size_t len, bool strict, struct lints *t,
                         struct diags *d)
{
    if (parse_eslint_json(text, len, strict, t, d))
        return true;
    if (d->oom)
        return false;
    /* Messages from a stylish report are only kept when its summary line is there. */
    {
        size_t mark = d->arr ? json_array_size(d->arr) : 0;
        if (parse_eslint_stylish(text, len, t, d))
            return true;
        while (d->arr && json_array_size(d->arr) > mark)
            json_array_remove(d->arr, json_array_size(d->arr) - 1);
    }
    return false;
}

/* ---- dispatch ---- */

static void add_format(struct rein_verify_counts *c, const char *name)
{
    size_t n = strlen(c->format);

    snprintf(c->format + n, sizeof(c->format) - n, "%s%s", n ? "+" : "", name);
}

typedef bool (*test_parser)(const char *, size_t, struct tests *, struct diags *);

static const struct {
    enum rein_verify_format fmt;
    test_parser fn;
} test_parsers[] = {
    {REIN_VERIFY_FORMAT_CTEST, parse_ctest},   {REIN_VERIFY_FORMAT_JEST, parse_jest},
    {REIN_VERIFY_FORMAT_VITEST, parse_vitest}, {REIN_VERIFY_FORMAT_PYTEST, parse_pytest},
    {REIN_VERIFY_FORMAT_TAP, parse_tap},       {REIN_VERIFY_FORMAT_CMOCKA, parse_cmocka},
};

static void run_lints(const char *text, size_t len, enum rein_verify_format fmt,
                      struct rein_verify_counts *counts, struct diags *d)
{
    bool any = fmt == REIN_VERIFY_FORMAT_AUTO;

    if (any || fmt == REIN_VERIFY_FORMAT_GCC) {
        struct lints g = {0};
        if (parse_gcc(text, len, &g, d)) {
            counts->has_diagnostics = true;
            counts->errors += g.errors;
            counts->warnings += g.warnings;
            add_format(counts, "gcc");
        }
    }
    if (any || fmt == REIN_VERIFY_FORMAT_ESLINT) {
        struct lints e = {0};
        if (parse_eslint(text, len, !any, &e, d)) {
            counts->has_diagnostics = true;
            counts->errors += e.errors;
            counts->warnings += e.warnings;
            add_format(counts, "eslint");
        }
    }
}

static void run_tests(const char *text, size_t len, enum rein_verify_format fmt,
                      struct rein_verify_counts *counts, struct diags *d)
{
    for (size_t i = 0; i < sizeof(test_parsers) / sizeof(test_parsers[0]); i++) {
        struct tests t = {0};
        size_t mark = d->arr ? json_array_size(d->arr) : 0;
        if (fmt != REIN_VERIFY_FORMAT_AUTO && fmt != test_parsers[i].fmt)
            continue;
        if (!test_parsers[i].fn(text, len, &t, d)) {
            /* Failure names seen by a parser whose summary never came are not kept. */
            while (d->arr && json_array_size(d->arr) > mark)
                json_array_remove(d->arr, json_array_size(d->arr) - 1);
            continue;
        }
        counts->has_tests = true;
        counts->passed = t.passed;
        counts->failed = t.failed;
        counts->skipped = t.skipped;
        counts->total = t.total;
        add_format(counts, rein_verify_format_name(test_parsers[i].fmt));
        return;
    }
}

rein_err rein_verify_output_parse(const char *text, size_t len, enum rein_verify_format fmt,
                                  struct rein_verify_counts *counts, json_t **diagnostics,
                                  rein_error *err)
{
    struct diags d = {0};
    size_t clen;
    char *clean;

    memset(counts, 0, sizeof(*counts));
    if (diagnostics)
        *diagnostics = NULL;
    if (fmt == REIN_VERIFY_FORMAT_NONE)
        return REIN_OK;
    clean = rein__verify_clean_text(text, len, &clen);
    if (!clean)
        return rein_error_set(err, REIN_ENOMEM, "out of memory parsing output");
    if (diagnostics) {
        d.arr = json_array();
        if (!d.arr) {
            rein_free(clean);
            return rein_error_set(err, REIN_ENOMEM, "out of memory parsing output");
        }
    }
    run_lints(clean, clen, fmt, counts, &d);
    run_tests(clean, clen, fmt, counts, &d);
    rein_free(clean);
    if (d.oom) {
        json_decref(d.arr);
        memset(counts, 0, sizeof(*counts));
        return rein_error_set(err, REIN_ENOMEM, "out of memory parsing output");
    }
    if (diagnostics)
        *diagnostics = d.arr;
    return REIN_OK;
}
