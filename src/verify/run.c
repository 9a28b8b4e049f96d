/*
 * Running a protocol file: selection by mode, `only` and trigger conditions; groups run one
 * after another, the protocols of a group in parallel on the pool; fast-fail between groups;
 * steps with timeouts, retries and success conditions; output parsed into counts and a
 * failure signature; then the claims of the agent's text, running any protocol a claim needs
 * that did not run; and finally the verdict (report.c).
 *
 * Each protocol writes only its own result slot, so the parallel workers share nothing but
 * the event callback, which is serialised by a mutex.
 */
#include "output_int.h"
#include "report_int.h"

#include <rein/trace.h>

#include <glob.h>
#include <stdarg.h>
#include <math.h>
#include <pthread.h>
#include <rein/proc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define STEP_OUTPUT_MAX  ((size_t)8 << 20)
#define REPORT_FILES_MAX 1000
#define DIAGS_MAX        50
#define SIG_LINES        20

extern char **environ;

struct run {
    const rein_verify_config *cfg;
    const struct rein_verify_opts *opts;
    const char *cwd;
    size_t tail_bytes;
    rein_verify_report *report;
    int64_t t0;
    pthread_mutex_t event_lock;
    rein_pool *pool; /* borrowed or temporary */
    bool own_pool;
    rein_error *err;
    /* The protocols of the stage being run (indices into report->r). */
    size_t *stage;
    size_t nstage;
    bool oom; /* set by a worker; the run then fails with REIN_ENOMEM */
    /* The rein.verify span's context: each protocol's span is its child on whichever pool
     * thread runs it. */
    const struct rein_trace_context *span_ctx;
};

/* ---- selection ---- */

static bool mode_has_layer(enum rein_verify_mode m, int layer)
{
    switch (m) {
    case REIN_VERIFY_MODE_MINIMAL:
        return layer == 1;
    case REIN_VERIFY_MODE_STANDARD:
    case REIN_VERIFY_MODE_DEFAULT:
        return layer == 1 || layer == 2 || layer == 5;
    case REIN_VERIFY_MODE_THOROUGH:
        return layer != 4;
    case REIN_VERIFY_MODE_FULL:
        return true;
    }
    return true;
}

static bool in_only(const char *const *only, const char *name)
{
    for (size_t i = 0; only[i]; i++) {
        if (strcmp(only[i], name) == 0)
            return true;
    }
    return false;
}

static unsigned change_bits(const struct rein_verify_changes *c)
{
    return (c->files_added ? REIN__COND_FILES_ADDED : 0) |
           (c->files_added || c->files_modified || c->files_deleted ? REIN__COND_FILES_CHANGED
                                                                    : 0) |
           (c->files_deleted ? REIN__COND_FILES_DELETED : 0) |
           (c->dependencies_changed ? REIN__COND_DEPENDENCIES : 0) |
           (c->api_changed ? REIN__COND_API : 0) |
           (c->security_sensitive ? REIN__COND_SECURITY : 0);
}

/* "no files added, no dependency changes" for the conditions that did not hold. */
static char *conditions_reason(unsigned when)
{
    static const struct {
        unsigned bit;
        const char *text;
    } names[] = {{REIN__COND_FILES_ADDED, "no files added"},
                 {REIN__COND_FILES_CHANGED, "no files changed"},
                 {REIN__COND_FILES_DELETED, "no files deleted"},
                 {REIN__COND_DEPENDENCIES, "no dependency changes"},
                 {REIN__COND_API, "no public signature changes"},
                 {REIN__COND_SECURITY, "no security-sensitive files changed"}};
    struct rein_buf b;
    char *out;

    rein_buf_init(&b, 4096);
    for (size_t i = 0; i < REIN_ARRAY_SIZE(names); i++) {
        if ((when & names[i].bit) &&
            (rein_buf_adds(&b, b.len ? ", " : "") || rein_buf_adds(&b, names[i].text))) {
            rein_buf_release(&b);
            return NULL;
        }
    }
    out = rein_buf_detach(&b, NULL);
    rein_buf_release(&b);
    return out;
}

static rein_err select_protocols(struct run *run)
{
    rein_verify_report *r = run->report;
    unsigned have = change_bits(&r->changes);

    for (size_t i = 0; i < r->n; i++) {
        struct rein__presult *p = &r->r[i];
        const struct rein__protocol *pr = p->proto;
        p->status = REIN_VERIFY_STATUS_NOT_RUN; /* selected, until it runs */
        if (run->opts->only) {
            if (!in_only(run->opts->only, pr->name)) {
                p->status = REIN_VERIFY_STATUS_SKIPPED;
                p->reason = rein_strdup("not among the protocols asked for");
            }
        } else if (!mode_has_layer(r->mode, pr->layer)) {
            p->status = REIN_VERIFY_STATUS_SKIPPED;
            p->reason = rein_asprintf("layer %d is not part of %s mode", pr->layer,
                                      rein_verify_mode_name(r->mode));
        } else if (pr->when && r->changes.known && !(pr->when & have)) {
            p->status = REIN_VERIFY_STATUS_SKIPPED;
            p->reason = conditions_reason(pr->when);
        } else if (pr->when && !r->changes.known) {
            if (!rein__report_note(r,
                                   "%s ran because the changes are unknown (not a git "
                                   "repository)",
                                   pr->name))
                return REIN_ENOMEM;
        }
        if (p->status == REIN_VERIFY_STATUS_SKIPPED && !p->reason)
            return REIN_ENOMEM;
    }
    return REIN_OK;
}

/* ---- steps ---- */

struct step_out {
    int exit_code;
    bool timed_out;
    bool cancelled;
    bool started;
    bool passed;
    int attempts;
    int64_t duration_ms;
    struct rein_verify_counts counts;
    json_t *diagnostics;
    char *output; /* cleaned; owned */
    size_t output_len;
    char why[300];
    json_t *notes; /* owned array of strings about the step's reports, or NULL */
};

static void step_out_release(struct step_out *o)
{
    json_decref(o->diagnostics);
    json_decref(o->notes);
    rein_free(o->output);
    memset(o, 0, sizeof(*o));
}

/* environ with the step's KEY=VALUE overrides; the strings are borrowed. */
static const char **merged_env(char **over)
{
    size_t ne = 0, no = 0, n = 0;
    const char **env;

    while (environ && environ[ne])
        ne++;
    while (over[no])
        no++;
    env = rein_calloc(ne + no + 1, sizeof(*env));
    if (!env)
        return NULL;
    for (size_t i = 0; i < ne; i++) {
        const char *eq = strchr(environ[i], '=');
        bool replaced = false;
        for (size_t k = 0; eq && k < no && !replaced; k++)
            replaced = strncmp(over[k], environ[i], (size_t)(eq - environ[i]) + 1) == 0;
        if (!replaced)
            env[n++] = environ[i];
    }
    for (size_t k = 0; k < no; k++)
        env[n++] = over[k];
    return env;
}

static void describe_failure(const struct rein__step *s, struct step_out *o, enum rein__tri t,
                             const char *note)
{
    if (o->timed_out)
        snprintf(o->why, sizeof(o->why), "timed out after %.3g s and was killed",
                 (double)s->timeout_ms / 1000);
    else if (o->cancelled)
        snprintf(o->why, sizeof(o->why), "cancelled");
    else if (t == REIN__UNKNOWN)
        snprintf(o->why, sizeof(o->why), "could not decide `%s`: %s", s->success_text, note);
    else if (s->success)
        snprintf(o->why, sizeof(o->why), "`%s` does not hold (exit code %d)", s->success_text,
                 o->exit_code);
    else
        snprintf(o->why, sizeof(o->why), "exited with %d", o->exit_code);
}

static void feed_output(void *ud, const char *data, size_t len)
{
    rein_verify_output_feed(ud, data, len);
}

static bool step_note(struct step_out *o, const char *fmt, ...) REIN_PRINTF(2, 3);

static bool step_note(struct step_out *o, const char *fmt, ...)
{
    char buf[400];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (!o->notes && !(o->notes = json_array()))
        return false;
    return json_array_append_new(o->notes, rein__verify_jstr(buf)) == 0;
}

/*
 * The files matching the patterns (relative to dir) that were written since the step began:
 * a report left over from an earlier run says nothing about this one (CI systems refuse
 * those too). Calls fn for each; false when memory ran out.
 */
static bool each_fresh_file(struct step_out *o, const char *dir, char **patterns, int64_t since_s,
                            const char *what,
                            bool (*fn)(struct step_out *o, const char *path, void *ud), void *ud)
{
    size_t fresh = 0, stale = 0;

    for (size_t i = 0; patterns[i]; i++) {
        char *pat = patterns[i][0] == '/' ? rein_strdup(patterns[i])
                                          : rein_asprintf("%s/%s", dir, patterns[i]);
        glob_t g;
        int grc;
        if (!pat)
            return false;
        memset(&g, 0, sizeof(g));
        grc = glob(pat, 0, NULL, &g);
        rein_free(pat);
        if (grc == GLOB_NOSPACE) {
            globfree(&g);
            return false;
        }
        for (size_t k = 0; grc == 0 && k < g.gl_pathc && fresh < REPORT_FILES_MAX; k++) {
            struct stat st;
            if (stat(g.gl_pathv[k], &st) != 0 || !S_ISREG(st.st_mode))
                continue;
            if ((int64_t)st.st_mtime < since_s) {
                stale++;
                continue;
            }
            fresh++;
            if (!fn(o, g.gl_pathv[k], ud)) {
                globfree(&g);
                return false;
            }
        }
        globfree(&g);
    }
    if (stale && !step_note(o, "%zu %s file%s older than this run ignored", stale, what,
                            stale == 1 ? "" : "s"))
        return false;
    if (!fresh && !stale && !step_note(o, "no %s file was written", what))
        return false;
    return true;
}

struct junit_files {
    struct rein__tests sum;
    json_t *diags;
    int files;
};

static bool read_report(struct step_out *o, const char *path, void *ud)
{
    struct junit_files *jf = ud;
    struct rein__junit *j = rein__junit_new(true);
    struct rein__tests t = {0};
    json_t *d = NULL;
    char chunk[65536];
    size_t n;
    FILE *f;
    bool ok;

    if (!j)
        return false;
    f = fopen(path, "rb");
    if (!f) {
        rein__junit_free(j);
        return step_note(o, "%s: cannot be read", path);
    }
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        rein__junit_feed(j, chunk, n);
    fclose(f);
    ok = rein__junit_finish(j, &t, &d);
    if (ok && rein__junit_error(j)[0])
        ok = step_note(o, "%s: %s", path, rein__junit_error(j));
    if (ok && !t.found)
        ok = step_note(o, "%s: not a JUnit XML report", path);
    if (ok && t.found) {
        jf->files++;
        jf->sum.found = true;
        jf->sum.passed += t.passed;
        jf->sum.failed += t.failed;
        jf->sum.skipped += t.skipped;
        jf->sum.total += t.total;
        for (size_t i = 0; i < json_array_size(d) && json_array_size(jf->diags) < REIN__DIAG_MAX;
             i++)
            ok &= json_array_append(jf->diags, json_array_get(d, i)) == 0;
    }
    json_decref(d);
    rein__junit_free(j);
    return ok;
}

struct cov_files {
    int files;
    double lowest;
};

static bool read_coverage(struct step_out *o, const char *path, void *ud)
{
    struct cov_files *cf = ud;
    struct rein_verify_coverage cov;
    rein_error err;
    rein_err rc = rein_verify_coverage_read(path, &cov, &err);

    if (rc == REIN_ENOMEM)
        return false;
    if (rc)
        return step_note(o, "%s", err.msg);
    /* Several reports (one per package or module): each must reach a threshold. */
    if (!cf->files || cov.percent < cf->lowest)
        cf->lowest = cov.percent;
    cf->files++;
    return true;
}

/* Test counts from the step's JUnit reports and coverage from its coverage reports: what
 * tools write to files wins over what they print. */
static rein_err read_step_files(const struct rein__step *s, const char *cwd, int64_t since_s,
                                struct step_out *o)
{
    if (s->reports) {
        struct junit_files jf = {.diags = json_array()};
        if (!jf.diags ||
            !each_fresh_file(o, cwd, s->reports, since_s, "JUnit report", read_report, &jf)) {
            json_decref(jf.diags);
            return REIN_ENOMEM;
        }
        if (jf.files) {
            size_t keep = 0;
            json_t *merged = json_array();
            /* The report's failures replace the printed test failures; diagnostics of the
             * compiler or linter stay. */
            for (size_t i = 0; merged && i < json_array_size(o->diagnostics); i++) {
                json_t *d = json_array_get(o->diagnostics, i);
                if (!json_object_get(d, "test") && json_array_append(merged, d) == 0)
                    keep++;
            }
            for (size_t i = 0; merged && i < json_array_size(jf.diags) && keep < REIN__DIAG_MAX;
                 i++, keep++)
                json_array_append(merged, json_array_get(jf.diags, i));
            if (!merged) {
                json_decref(jf.diags);
                return REIN_ENOMEM;
            }
            json_decref(o->diagnostics);
            o->diagnostics = merged;
            o->counts.has_tests = true;
            o->counts.passed = jf.sum.passed;
            o->counts.failed = jf.sum.failed;
            o->counts.skipped = jf.sum.skipped;
            o->counts.total = jf.sum.total;
            if (!strstr(o->counts.format, "junit")) {
                size_t n = strlen(o->counts.format);
                snprintf(o->counts.format + n, sizeof(o->counts.format) - n, "%sjunit",
                         n ? "+" : "");
            }
        }
        json_decref(jf.diags);
    }
    if (s->coverage) {
        struct cov_files cf = {0};
        if (!each_fresh_file(o, cwd, s->coverage, since_s, "coverage report", read_coverage, &cf))
            return REIN_ENOMEM;
        if (cf.files) {
            o->counts.has_coverage = true;
            o->counts.coverage = cf.lowest;
        }
    }
    return REIN_OK;
}

/* One attempt of a step. REIN_OK unless memory ran out; failures are in *o. */
static rein_err attempt(struct run *run, const struct rein__step *s, struct step_out *o)
{
    struct rein_proc_run_opts po = {
        .proc = {.argv = (const char *const *)s->argv, .merge_stderr = true},
        .stdout_max = STEP_OUTPUT_MAX,
        .keep_tail = true,
        .timeout_ms = s->timeout_ms,
        .cancel = run->opts->cancel,
        .on_stdout = feed_output};
    rein_verify_output *parser;
    int64_t since_s = (int64_t)time(NULL) - 1; /* file times have whole seconds */
    struct rein_proc_result res;
    struct rein__expr_env env = {0};
    const char **envp = NULL;
    char *cwd = NULL, note[200] = "";
    rein_error perr;
    enum rein__tri t;
    rein_err rc;

    step_out_release(o);
    if (s->cwd) {
        cwd = s->cwd[0] == '/' ? rein_strdup(s->cwd) : rein_asprintf("%s/%s", run->cwd, s->cwd);
        if (!cwd)
            return REIN_ENOMEM;
    }
    po.proc.cwd = cwd ? cwd : run->cwd;
    if (s->env) {
        envp = merged_env(s->env);
        if (!envp) {
            rein_free(cwd);
            return REIN_ENOMEM;
        }
        po.proc.env = envp;
    }
    /* The output is parsed as it streams, so every result is counted however long it is;
     * only its tail (STEP_OUTPUT_MAX) is kept for `output` conditions and the report. */
    parser = rein_verify_output_new(s->format, true);
    if (!parser) {
        rein_free(cwd);
        rein_free(envp);
        return REIN_ENOMEM;
    }
    po.stdout_data = parser;
    rc = rein_proc_run(&po, &res, &perr);
    rein_free(envp);
    if (rc) {
        rein_verify_output_free(parser);
        rein_free(cwd);
        if (rc == REIN_ENOMEM)
            return rc;
        /* The program could not start: a failed step, with the reason, not an error. */
        o->exit_code = 127;
        snprintf(o->why, sizeof(o->why), "%s", perr.msg);
        o->output = rein_strdup(perr.msg);
        o->output_len = o->output ? strlen(o->output) : 0;
        return o->output ? REIN_OK : REIN_ENOMEM;
    }
    o->started = true;
    o->exit_code = res.exit_code;
    o->timed_out = res.timed_out;
    o->cancelled = res.cancelled;
    o->duration_ms = res.duration_ms;
    o->output = rein__verify_clean_text(res.out.ptr, res.out.len, &o->output_len);
    rein_proc_result_release(&res);
    rc = o->output ? rein_verify_output_finish(parser, &o->counts, &o->diagnostics, NULL)
                   : REIN_ENOMEM;
    rein_verify_output_free(parser);
    if (!rc)
        rc = read_step_files(s, po.proc.cwd, since_s, o);
    rein_free(cwd);
    if (rc)
        return rc;
    env = (struct rein__expr_env){o->exit_code, o->timed_out, o->duration_ms,
                                  &o->counts,   o->output,    o->output_len};
    t = s->success ? rein__verify_expr_eval(s->success, &env, note, sizeof(note))
                   : (o->exit_code == 0 ? REIN__TRUE : REIN__FALSE);
    o->passed = t == REIN__TRUE && !o->timed_out && !o->cancelled;
    if (!o->passed)
        describe_failure(s, o, t, note);
    return REIN_OK;
}

static rein_err run_step(struct run *run, const struct rein__step *s, struct step_out *o)
{
    int tries = s->on_failure == REIN__ON_FAILURE_RETRY ? s->retries + 1 : 1;
    int64_t total = 0;

    for (int i = 1; i <= tries; i++) {
        rein_err rc = attempt(run, s, o);
        if (rc)
            return rc;
        total += o->duration_ms;
        o->attempts = i;
        /* A program that cannot start, a timeout or a cancel will not go better next time. */
        if (o->passed || !o->started || o->cancelled || rein_cancel_is_set(run->opts->cancel))
            break;
    }
    o->duration_ms = total;
    return REIN_OK;
}

/* ---- protocols ---- */

static void add_counts(struct rein_verify_counts *sum, const struct rein_verify_counts *c)
{
    size_t n = strlen(sum->format);

    if (c->has_tests) {
        sum->has_tests = true;
        sum->passed += c->passed;
        sum->failed += c->failed;
        sum->skipped += c->skipped;
        sum->total += c->total;
    }
    if (c->has_diagnostics) {
        sum->has_diagnostics = true;
        sum->errors += c->errors;
        sum->warnings += c->warnings;
    }
    /* Steps that each report coverage (one per module): a threshold holds for the lowest. */
    if (c->has_coverage && (!sum->has_coverage || c->coverage < sum->coverage)) {
        sum->has_coverage = true;
        sum->coverage = c->coverage;
    }
    if (c->format[0] && !strstr(sum->format, c->format))
        snprintf(sum->format + n, sizeof(sum->format) - n, "%s%s", n ? "+" : "", c->format);
}

static bool add_diagnostics(json_t *into, json_t *from)
{
    size_t i;
    json_t *d;

    json_array_foreach(from, i, d)
    {
        if (json_array_size(into) >= DIAGS_MAX)
            break;
        if (json_array_append(into, d))
            return false;
    }
    return true;
}

static json_t *step_json(const struct rein__step *s, const struct step_out *o, const char *status)
{
    json_t *j =
        json_pack("{s:s, s:s, s:s, s:i, s:I, s:i, s:b}", "name", s->name, "command", s->command,
                  "status", status, "exit_code", o->exit_code, "duration_ms",
                  (json_int_t)o->duration_ms, "attempts", o->attempts, "timed_out", o->timed_out);

    if (j && o->why[0] && json_object_set_new(j, "reason", rein__verify_jstr(o->why))) {
        json_decref(j);
        return NULL;
    }
    if (j && o->notes && json_object_set(j, "notes", o->notes)) {
        json_decref(j);
        return NULL;
    }
    return j;
}

/* Digits and hex become '#', blank runs one space: line numbers and times do not matter. */
static char *normalize(const char *s, size_t n)
{
    char *out = rein_malloc(n + 1);
    size_t o = 0;

    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '0' && i + 1 < n && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
            i += 2;
            while (i < n && strchr("0123456789abcdefABCDEF", s[i]) && s[i])
                i++;
            i--;
            c = '#';
        } else if (c >= '0' && c <= '9') {
            while (i + 1 < n && s[i + 1] >= '0' && s[i + 1] <= '9')
                i++;
            c = '#';
        } else if (c == ' ' || c == '\t') {
            while (i + 1 < n && (s[i + 1] == ' ' || s[i + 1] == '\t'))
                i++;
            c = ' ';
        }
        out[o++] = c;
    }
    out[o] = '\0';
    return out;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* What failed, stable across runs that fail the same way: 16 hex digits of SHA-256. */
static bool compute_signature(struct rein__presult *p, bool timed_out, int exit_code)
{
    struct rein__sha256 h;
    size_t nd = json_array_size(p->diagnostics), n = 0;
    char **items = rein_calloc(nd + SIG_LINES + 1, sizeof(*items));
    char head[64];
    bool ok = items != NULL;
    size_t i;
    json_t *d;

    rein__sha256_init(&h);
    rein__sha256_add(&h, p->proto->name, strlen(p->proto->name) + 1);
    snprintf(head, sizeof(head), timed_out ? "timeout" : "exit:%d", exit_code);
    rein__sha256_add(&h, head, strlen(head) + 1);
    if (nd >= REIN__DIAG_MAX) {
        /* The list describes only the first failures: 80 and 78 failing tests that start
         * alike are still different failures, so the counts take part. */
        snprintf(head, sizeof(head), "failed:%lld errors:%lld warnings:%lld",
                 (long long)p->counts.failed, (long long)p->counts.errors,
                 (long long)p->counts.warnings);
        rein__sha256_add(&h, head, strlen(head) + 1);
    }
    json_array_foreach(p->diagnostics, i, d)
    {
        const char *parts[] = {json_string_value(json_object_get(d, "severity")),
                               json_string_value(json_object_get(d, "file")),
                               json_string_value(json_object_get(d, "rule")),
                               json_string_value(json_object_get(d, "test")),
                               json_string_value(json_object_get(d, "message"))};
        char *joined = ok ? rein_asprintf("%s|%s|%s|%s|%s", parts[0] ? parts[0] : "",
                                          parts[1] ? parts[1] : "", parts[2] ? parts[2] : "",
                                          parts[3] ? parts[3] : "", parts[4] ? parts[4] : "")
                          : NULL;
        if (!ok) {
            rein_free(joined);
            break;
        }
        items[n] = joined ? normalize(joined, strlen(joined)) : NULL;
        rein_free(joined);
        ok = items[n] != NULL;
        n += ok;
    }
    if (ok && nd == 0) {
        /* Nothing parsed: the last lines of the output say what failed. */
        const char *t = p->tail;
        size_t len = strlen(t), lines = 0, start = len;
        while (start > 0 && lines <= SIG_LINES)
            lines += t[--start] == '\n';
        items[n] = normalize(t + start, len - start);
        ok = items[n] != NULL;
        n += items[n] != NULL;
    }
    if (ok) {
        qsort(items, n, sizeof(*items), cmp_str);
        for (i = 0; i < n; i++)
            rein__sha256_add(&h, items[i], strlen(items[i]) + 1);
        rein__sha256_hex(&h, p->signature, 16);
    }
    for (i = 0; items && i < n; i++)
        rein_free(items[i]);
    rein_free(items);
    return ok;
}

static void emit(struct run *run, enum rein_verify_event ev, size_t idx)
{
    struct rein_verify_protocol_info info;

    if (!run->opts->on_event)
        return;
    pthread_mutex_lock(&run->event_lock);
    if (rein_verify_report_protocol(run->report, idx, &info))
        run->opts->on_event(ev, &info, run->opts->userdata);
    pthread_mutex_unlock(&run->event_lock);
}

/* The JSON document a step printed: the whole output, else its last non-empty line. New
 * reference, or NULL. */
static json_t *output_document(const char *text, size_t len)
{
    json_t *doc = json_loadb(text, len, JSON_DECODE_ANY, NULL);
    const char *end = text + len, *start;

    if (doc)
        return doc;
    while (end > text && strchr(" \t\r\n", end[-1]))
        end--;
    start = end;
    while (start > text && start[-1] != '\n')
        start--;
    return start < end ? json_loadb(start, (size_t)(end - start), JSON_DECODE_ANY, NULL) : NULL;
}

/*
 * output_schema (002's custom protocol template): the last step's JSON output must match it.
 * The errors become the protocol's diagnostics. false with why when it does not hold;
 * *oom when memory ran out.
 */
static bool output_matches(struct rein__presult *p, const struct step_out *last, char *why,
                           size_t why_len, bool *oom)
{
    rein_schema_result *res;
    struct rein__diags d = {.arr = p->diagnostics};
    rein_error err;
    rein_err rc;
    size_t n;

    p->output = output_document(last->output ? last->output : "", last->output_len);
    if (!p->output) {
        snprintf(why, why_len,
                 "the output is not JSON, and output_schema needs the last step "
                 "to print a JSON document");
        return false;
    }
    res = rein_schema_result_new();
    if (!res) {
        *oom = true;
        return false;
    }
    rc = rein_schema_validate(p->proto->output_schema, p->output, 0, res, &err);
    n = rein_schema_result_count(res);
    for (size_t i = 0; rc == REIN_EINVALID && i < n; i++) {
        char msg[400];
        const char *path = rein_schema_result_instance_path(res, i);
        json_t *o = rein__diag_new(&d, "error");
        snprintf(msg, sizeof(msg), "%s: %s", path[0] ? path : "/",
                 rein_schema_result_message(res, i));
        rein__diag_set_str(&d, o, "message", msg, strlen(msg));
        if (i == 0)
            snprintf(why, why_len, "the output does not match output_schema: %s%s", msg,
                     n > 1 ? " (and more)" : "");
    }
    if (rc != REIN_OK && rc != REIN_EINVALID)
        snprintf(why, why_len, "output_schema could not be applied: %s", err.msg);
    rein_schema_result_free(res);
    *oom = d.oom || rc == REIN_ENOMEM;
    return rc == REIN_OK;
}

/* The first note a step made about its coverage report ("no coverage report file was
 * written", "cov.json: … none of coverage.py's …"): why the number is missing; NULL if none. */
static const char *coverage_note(const json_t *steps)
{
    size_t i, k;
    const json_t *s, *n;

    json_array_foreach(steps, i, s)
    {
        json_array_foreach(json_object_get(s, "notes"), k, n)
        {
            const char *note = json_string_value(n);
            if (note && strstr(note, "coverage"))
                return note;
        }
    }
    return NULL;
}

/* Protocol-level criteria over the summed steps. */
static bool protocol_criteria(struct rein__presult *p, const struct step_out *last, bool timed_out,
                              char *why, size_t why_len, bool *oom)
{
    struct rein__expr_env env = {
        last->exit_code, timed_out, p->duration_ms, &p->counts, last->output ? last->output : "",
        last->output_len};
    char note[200] = "";
    enum rein__tri t;
    double th = p->proto->coverage_threshold;

    if (p->proto->output_schema && !output_matches(p, last, why, why_len, oom))
        return false;
    if (p->proto->success) {
        t = rein__verify_expr_eval(p->proto->success, &env, note, sizeof(note));
        if (t == REIN__UNKNOWN) {
            snprintf(why, why_len, "could not decide `%s`: %s", p->proto->success_text, note);
            return false;
        }
        if (t == REIN__FALSE) {
            snprintf(why, why_len, "`%s` does not hold", p->proto->success_text);
            return false;
        }
    }
    /* The seed's TEST: "all_tests_pass AND coverage >= threshold". */
    if (isnan(th))
        return true;
    if (!p->counts.has_coverage) {
        const char *seen = coverage_note(p->steps);
        if (seen)
            snprintf(why, why_len, "coverage_threshold is %g%% but no coverage was reported: %s",
                     th, seen);
        else
            snprintf(why, why_len,
                     "coverage_threshold is %g%% but no coverage was reported (give the step a "
                     "`coverage:` report file, or print a coverage total)",
                     th);
        return false;
    }
    if (p->counts.coverage + 1e-9 < th) {
        snprintf(why, why_len, "coverage %.2f%% is below the threshold of %g%%", p->counts.coverage,
                 th);
        return false;
    }
    return true;
}

static rein_err finish_protocol(struct run *run, struct rein__presult *p, struct step_out *last,
                                const char *failed_step, bool timed_out)
{
    size_t tail_len;
    const char *tail = rein__verify_tail(last->output ? last->output : "", last->output_len,
                                         run->tail_bytes, &tail_len);
    char why[400] = "";
    bool oom = false;

    p->ended_ms = rein_now_ms() - run->t0;
    p->tail = rein_strndup(tail, tail_len);
    if (!p->tail)
        return REIN_ENOMEM;
    if (!failed_step && !protocol_criteria(p, last, timed_out, why, sizeof(why), &oom))
        failed_step = "";
    if (oom)
        return REIN_ENOMEM;
    if (failed_step) {
        p->status = REIN_VERIFY_STATUS_FAILED;
        p->reason = failed_step[0] ? rein_asprintf("step '%s' %s", failed_step, last->why)
                                   : rein_strdup(why);
        if (!p->reason || !compute_signature(p, timed_out, last->exit_code))
            return REIN_ENOMEM;
        p->own_confidence = 1.0; /* a failure that was observed is a fact */
        return REIN_OK;
    }
    p->status = REIN_VERIFY_STATUS_PASSED;
    p->own_confidence = 1.0;
    if (p->flaky) {
        p->own_confidence = 0.8;
        p->reason = rein_asprintf("passed on attempt %d (flaky)", p->attempts);
    } else if (p->counts.has_tests && p->counts.total == 0) {
        p->own_confidence = 0.5; /* exit 0 with no tests run proves little */
        p->reason = rein_strdup("passed, but no tests ran");
    } else {
        p->reason = rein_strdup("");
    }
    return p->reason ? REIN_OK : REIN_ENOMEM;
}

/* FUNCTIONALITY or ARCHITECT without steps: the judge (judged.c). */
static rein_err run_judged(struct run *run, size_t idx)
{
    struct rein__presult *p = &run->report->r[idx];
    struct rein__judged_in in = {.proto = p->proto,
                                 .cwd = run->cwd,
                                 .base = run->opts->base,
                                 .goal = run->opts->goal,
                                 .judge = run->opts->judge,
                                 .judge_opts = run->opts->judge_opts,
                                 .cancel = run->opts->cancel};
    int64_t t = rein_now_ms();
    rein_err rc = rein__verify_judged(&in, p);

    if (rc == REIN_ECANCELED) {
        p->status = REIN_VERIFY_STATUS_NOT_RUN;
        p->ran = false;
        rein_free(p->reason);
        p->reason = rein_strdup("not run: cancelled");
        rc = p->reason ? REIN_OK : REIN_ENOMEM;
    }
    if (rc)
        return rc;
    p->duration_ms = rein_now_ms() - t;
    p->ended_ms = rein_now_ms() - run->t0;
    if (!p->tail && !(p->tail = rein_strdup("")))
        return REIN_ENOMEM;
    if (p->status == REIN_VERIFY_STATUS_FAILED && !compute_signature(p, false, 0))
        return REIN_ENOMEM;
    emit(run, REIN_VERIFY_EVENT_END, idx);
    return REIN_OK;
}

static rein_err run_protocol_steps(struct run *run, size_t idx);

/*
 * One protocol's run is a span of its own (rein.verify.protocol, a child of rein.verify):
 * its name, priority, stage, status, attempts and whether it was flaky; failed when it did
 * not pass (error.type: its status).
 */
static rein_err run_protocol(struct run *run, size_t idx)
{
    struct rein__presult *p = &run->report->r[idx];
    struct rein_trace_scope scope;
    struct rein_span span;
    rein_err rc;

    rein_trace_scope_enter(&scope, run->span_ctx);
    rein_span_start(&span, "rein.verify.protocol", REIN_SPAN_INTERNAL, NULL);
    rein_span_set_str(&span, "rein.verify.protocol", p->proto->name);
    rein_span_set_str(&span, "rein.verify.priority", rein_verify_priority_name(p->priority));
    rein_span_set_int(&span, "rein.verify.stage", p->stage);
    if (p->for_claim)
        rein_span_set_bool(&span, "rein.verify.for_claim", true);
    rc = run_protocol_steps(run, idx);
    if (rein_span_is_recording(&span)) {
        const char *status = rein_verify_status_name(p->status);
        rein_span_set_str(&span, "rein.verify.status", status);
        rein_span_set_int(&span, "rein.verify.attempts", p->attempts);
        if (p->flaky)
            rein_span_set_bool(&span, "rein.verify.flaky", true);
        if (rc)
            rein_span_fail(&span, rein_err_name(rc), NULL);
        else if (p->status != REIN_VERIFY_STATUS_PASSED)
            rein_span_fail(&span, status, p->reason && p->reason[0] ? p->reason : NULL);
    }
    rein_span_end(&span);
    rein_trace_scope_leave(&scope);
    return rc;
}

static rein_err run_protocol_steps(struct run *run, size_t idx)
{
    struct rein__presult *p = &run->report->r[idx];
    const struct rein__protocol *pr = p->proto;
    struct step_out o = {0}, last = {0};
    const char *failed_step = NULL;
    bool timed_out = false;
    rein_err rc = REIN_OK;

    p->started_ms = rein_now_ms() - run->t0;
    p->ran = true;
    p->diagnostics = json_array();
    p->steps = json_array();
    if (!p->diagnostics || !p->steps)
        return REIN_ENOMEM;
    emit(run, REIN_VERIFY_EVENT_START, idx);
    if (pr->judged)
        return run_judged(run, idx);
    for (size_t i = 0; i < pr->nsteps && !failed_step; i++) {
        const struct rein__step *s = &pr->steps[i];
        bool ignored;
        rc = run_step(run, s, &o);
        if (rc)
            break;
        ignored = !o.passed && s->on_failure == REIN__ON_FAILURE_SKIP && !o.cancelled;
        p->duration_ms += o.duration_ms;
        p->attempts = o.attempts > p->attempts ? o.attempts : p->attempts;
        p->flaky |= o.passed && o.attempts > 1;
        timed_out |= o.timed_out;
        add_counts(&p->counts, &o.counts);
        if (!add_diagnostics(p->diagnostics, o.diagnostics) ||
            json_array_append_new(p->steps, step_json(s, &o,
                                                      o.passed  ? "passed"
                                                      : ignored ? "failed (ignored)"
                                                                : "failed"))) {
            rc = REIN_ENOMEM;
            break;
        }
        if (!o.passed && !ignored)
            failed_step = s->name;
        step_out_release(&last);
        last = o;
        memset(&o, 0, sizeof(o));
    }
    step_out_release(&o);
    if (!rc)
        rc = finish_protocol(run, p, &last, failed_step, timed_out);
    step_out_release(&last);
    if (!rc)
        emit(run, REIN_VERIFY_EVENT_END, idx);
    return rc;
}

static void stage_job(void *arg, size_t i)
{
    struct run *run = arg;

    if (run_protocol(run, run->stage[i]))
        run->oom = true; /* only memory can fail a protocol's bookkeeping */
}

static rein_err ensure_pool(struct run *run, size_t width)
{
    if (run->pool || width < 2)
        return REIN_OK;
    run->pool = rein_pool_new((unsigned)(width - 1 < 8 ? width - 1 : 8), run->err);
    if (!run->pool)
        return run->err ? run->err->code : REIN_ENOMEM;
    run->own_pool = true;
    return REIN_OK;
}

static bool stage_failed(struct run *run, const char **name)
{
    for (size_t i = 0; i < run->nstage; i++) {
        const struct rein__presult *p = &run->report->r[run->stage[i]];
        if (p->status == REIN_VERIFY_STATUS_FAILED && p->proto->priority != REIN_VERIFY_P2) {
            *name = p->proto->name;
            return true;
        }
    }
    return false;
}

/* Runs the selected protocols of stage after stage; marks the rest not_run after a failure. */
static rein_err run_stages(struct run *run)
{
    rein_verify_report *r = run->report;
    const char *stopper = NULL;
    int stage_no = 0;

    run->stage = rein_calloc(r->n + 1, sizeof(*run->stage));
    if (!run->stage)
        return REIN_ENOMEM;
    for (size_t i = 0; i < r->n;) {
        size_t j = i;
        /* A stage: protocols of one group (or one protocol when parallel is off). */
        while (j < r->n &&
               (j == i || (run->cfg->parallel && r->r[j].proto->group == r->r[i].proto->group)))
            j++;
        run->nstage = 0;
        for (size_t k = i; k < j; k++) {
            struct rein__presult *p = &r->r[k];
            p->stage = stage_no;
            if (p->status != REIN_VERIFY_STATUS_NOT_RUN)
                continue; /* skipped */
            if (stopper || rein_cancel_is_set(run->opts->cancel)) {
                p->reason = stopper ? rein_asprintf("not run: %s failed first (fast-fail)", stopper)
                                    : rein_strdup("not run: cancelled");
                if (!p->reason)
                    return REIN_ENOMEM;
                continue;
            }
            run->stage[run->nstage++] = k;
        }
        if (run->nstage) {
            rein_err rc = run->cfg->parallel ? ensure_pool(run, run->nstage) : REIN_OK;
            if (rc)
                return rc;
            rein_pool_run_batch(run->pool, run->nstage, 0, stage_job, run);
            if (run->oom)
                return REIN_ENOMEM;
            if (run->cfg->fast_fail && !stopper)
                stage_failed(run, &stopper);
        }
        stage_no++;
        i = j;
    }
    return REIN_OK;
}

/* Each result's confidence is at most that of the earlier stages it was built on. */
static void propagate_confidence(rein_verify_report *r)
{
    for (size_t i = 0; i < r->n; i++) {
        struct rein__presult *p = &r->r[i];
        double c = p->own_confidence;
        if (!p->ran)
            continue;
        for (size_t k = 0; k < r->n; k++) {
            if (r->r[k].ran && !r->r[k].for_claim && r->r[k].stage < p->stage)
                c = rein_verify_confidence_propagate(c, &r->r[k].own_confidence, 1);
        }
        p->confidence = c;
    }
}

/* ---- claims ---- */

struct claim_ctx {
    struct run *run;
    rein_err rc;
};

static int run_check(const char *protocol, char *why, size_t why_len, double *confidence,
                     void *userdata)
{
    struct claim_ctx *cc = userdata;
    rein_verify_report *r = cc->run->report;
    struct rein__presult *p = NULL;

    for (size_t i = 0; i < r->n && !p; i++) {
        if (strcmp(r->r[i].proto->name, protocol) == 0)
            p = &r->r[i];
    }
    if (!p)
        return -1;
    if (!p->ran) {
        /* Not selected, or stopped by fast-fail: a claim about it deserves its own run. */
        rein_free(p->reason);
        p->reason = NULL;
        p->for_claim = true;
        cc->rc = run_protocol(cc->run, (size_t)(p - r->r));
        if (cc->rc) {
            snprintf(why, why_len, "out of memory");
            return 0;
        }
        p->confidence = p->own_confidence;
    }
    *confidence = p->confidence;
    if (p->status == REIN_VERIFY_STATUS_PASSED)
        snprintf(why, why_len, "%s", p->reason && p->reason[0] ? p->reason : "all steps passed");
    else
        snprintf(why, why_len, "%s", p->reason ? p->reason : "");
    return p->status == REIN_VERIFY_STATUS_PASSED;
}

static rein_err check_claims(struct run *run)
{
    struct claim_ctx cc = {run, REIN_OK};
    const struct rein_verify_opts *o = run->opts;
    struct rein_claims_evidence ev = {.ledger = o->ledger,
                                      .reg = o->registry,
                                      .tree = true,
                                      .cwd = run->cwd,
                                      .base = o->base,
                                      .run_check = run_check,
                                      .userdata = &cc};
    rein_claims_vocab *vocab = rein_claims_vocab_new(o->registry, run->err);
    rein_err rc;

    if (!vocab)
        return REIN_ENOMEM;
    if (o->ledger && rein_claims_vocab_add_ledger(vocab, o->ledger) != REIN_OK) {
        rein_claims_vocab_free(vocab);
        return rein_error_set(run->err, REIN_ENOMEM, "out of memory reading the ledger");
    }
    run->report->claims = rein_claims_extract(o->claims_text, o->claims_len, vocab, run->err);
    rein_claims_vocab_free(vocab);
    if (!run->report->claims)
        return REIN_ENOMEM;
    for (size_t i = 0; i < rein_claims_count(o->claims_more); i++) {
        const struct rein_claim *c = rein_claims_get(o->claims_more, i);
        if (rein_claims_add(run->report->claims, c->kind, c->text, c->subject, c->path, c->name))
            return rein_error_set(run->err, REIN_ENOMEM, "out of memory");
    }
    rc = rein_claims_check(run->report->claims, &ev, run->err);
    return rc ? rc : cc.rc;
}

/* ---- the run ---- */

static rein_err read_changes(struct run *run)
{
    rein_verify_report *r = run->report;
    bool needed = r->review_mode;
    rein_err rc;

    for (size_t i = 0; i < r->n; i++)
        needed |= r->r[i].proto->when != 0;
    if (!needed)
        return REIN_OK;
    rc = rein_verify_changes_read(run->cwd, run->opts->base, &r->changes, run->err);
    if (rc == REIN_EINVAL || rc == REIN_ENOMEM)
        return rc;
    if (rc) { /* git misbehaved: the changes are unknown, which runs the conditional ones */
        memset(&r->changes, 0, sizeof(r->changes));
        if (!rein__report_note(r, "could not read changes from git: %s",
                               run->err ? run->err->msg : rein_strerror(rc)))
            return REIN_ENOMEM;
    }
    return REIN_OK;
}

static rein_err review(rein_verify_report *r)
{
    const struct rein_verify_changes *c = &r->changes;
    const char *reasons[4];
    size_t n = 0;

    /* The judge's NEEDS_REVIEW asks for a person in any mode. */
    for (size_t i = 0; i < r->n; i++) {
        if (!r->r[i].review_why)
            continue;
        r->review_required = true;
        if (json_array_append_new(r->review_reasons, rein__verify_jstr(r->r[i].review_why)))
            return REIN_ENOMEM;
    }
    if (!r->review_mode)
        return REIN_OK;
    if (c->files_added || c->dependencies_changed || c->api_changed)
        reasons[n++] = "architecture changes (files added, dependencies or public signatures)";
    if (c->security_sensitive)
        reasons[n++] = "security-sensitive files changed";
    if (!c->known)
        reasons[n++] = "the changes are unknown (not a git repository)";
    r->review_required |= n > 0;
    for (size_t i = 0; i < n; i++) {
        if (json_array_append_new(r->review_reasons, json_string(reasons[i])))
            return REIN_ENOMEM;
    }
    return REIN_OK;
}

static rein_err check_only(const rein_verify_config *cfg, const char *const *only, rein_error *err)
{
    for (size_t i = 0; only && only[i]; i++) {
        if (!rein_verify_config_has_protocol(cfg, only[i]))
            return rein_error_set(err, REIN_EINVAL, "the protocol file declares no protocol \"%s\"",
                                  only[i]);
    }
    return REIN_OK;
}

static rein_verify_report *report_new(const rein_verify_config *cfg, enum rein_verify_mode mode)
{
    rein_verify_report *r = rein_calloc(1, sizeof(*r));

    if (!r)
        return NULL;
    r->mode = mode;
    r->review_mode = mode == REIN_VERIFY_MODE_THOROUGH || mode == REIN_VERIFY_MODE_FULL;
    r->notes = json_array();
    r->review_reasons = json_array();
    r->r = rein_calloc(cfg->nprotocols + 1, sizeof(*r->r));
    if (!r->notes || !r->review_reasons || !r->r) {
        rein_verify_report_free(r);
        return NULL;
    }
    r->n = cfg->nprotocols;
    for (size_t i = 0; i < r->n; i++) {
        struct rein__presult *p = &r->r[i];
        p->proto = &cfg->protocols[i];
        p->name = rein_strdup(p->proto->name);
        p->priority = p->proto->priority;
        p->group = p->proto->group;
        p->started_ms = p->ended_ms = -1;
        if (!p->name) {
            rein_verify_report_free(r);
            return NULL;
        }
    }
    return r;
}

rein_err rein_verify_run(const rein_verify_config *cfg, const struct rein_verify_opts *opts,
                         rein_verify_report **out, rein_error *err)
{
    static const struct rein_verify_opts defaults = {0};
    struct run run = {.cfg = cfg, .opts = opts ? opts : &defaults, .err = err};
    enum rein_verify_mode mode;
    struct rein_span span;
    rein_err rc;

    *out = NULL;
    rc = check_only(cfg, run.opts->only, err);
    if (rc)
        return rc;
    mode = run.opts->mode != REIN_VERIFY_MODE_DEFAULT ? run.opts->mode : cfg->mode;
    run.report = report_new(cfg, mode ? mode : REIN_VERIFY_MODE_STANDARD);
    if (!run.report)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    run.cwd = run.opts->cwd ? run.opts->cwd : ".";
    run.tail_bytes = run.opts->tail_bytes ? run.opts->tail_bytes : 4096;
    run.pool = run.opts->pool;
    run.t0 = rein_now_ms();
    pthread_mutex_init(&run.event_lock, NULL);
    /* The protocols' run is one span, each protocol a child span (their commands are
     * processes of rein's, not calls). */
    rein_span_start(&span, "rein.verify", REIN_SPAN_INTERNAL, NULL);
    run.span_ctx = &span.ctx;
    rc = read_changes(&run);
    if (!rc)
        rc = select_protocols(&run);
    if (!rc)
        rc = run_stages(&run);
    if (!rc) {
        propagate_confidence(run.report);
        if (run.opts->claims_text)
            rc = check_claims(&run);
    }
    if (!rc)
        rc = review(run.report);
    pthread_mutex_destroy(&run.event_lock);
    if (run.own_pool)
        rein_pool_free(run.pool);
    rein_free(run.stage);
    if (rc) {
        if (rc == REIN_ENOMEM)
            rein_error_set(err, rc, "out of memory during verification");
        rein_verify_report_free(run.report);
        rein_span_fail(&span, rein_err_name(rc), NULL);
        rein_span_end(&span);
        return rc;
    }
    /* From here on the report stands alone: the config may be freed before it. */
    for (size_t i = 0; i < run.report->n; i++)
        run.report->r[i].proto = NULL;
    rein__report_finish(run.report);
    rein_span_set_int(&span, "rein.verify.protocols", (int64_t)run.report->n);
    rein_span_set_str(&span, "rein.verify.verdict",
                      rein_verify_verdict_name(rein_verify_report_verdict(run.report)));
    rein_span_end(&span);
    *out = run.report;
    return REIN_OK;
}
