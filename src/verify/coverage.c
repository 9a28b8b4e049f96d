/*
 * Coverage readers: the totals that coverage tools print, and the report files they write.
 *
 * Printed totals (read line by line from a step's output, rein__coverage_line):
 *   gcovr's and coverage.py's text report   "TOTAL   8   2   75%"
 *   gcovr --print-summary                   "lines: 75.0% (6 out of 8)"
 *   lcov --summary, genhtml                 "  lines......: 75.0% (6 of 8 lines)"
 *   go test -cover                          "ok  x/calc  0.01s  coverage: 75.0% of statements"
 *                                           (one per package: the lowest counts, so every
 *                                           package must reach a threshold)
 *   go tool cover -func                     "total:  (statements)  75.0%"
 *   Jest/Istanbul text-summary              "Lines        : 75% ( 6/8 )"
 *   Istanbul/Vitest text table              "All files |  75 |  100 |  100 |  75 |" (% Lines)
 * Report files (rein_verify_coverage_read, format found from the content):
 *   coverage.py `coverage json`     totals.percent_covered
 *   Istanbul coverage-summary.json  total.lines.pct (Jest, Vitest, nyc json-summary)
 *   gcovr --json-summary            line_percent
 *   lcov tracefile (.info)          the sum of LH over the sum of LF
 *   Go -coverprofile                covered statements over statements, blocks merged
 *                                   (a block listed twice counts once, covered if any says so)
 *   JaCoCo XML                      the report's LINE counter
 *   Cobertura XML                   <coverage line-rate> (gcovr --xml, coverage xml, Istanbul)
 * The number is line coverage in percent wherever the format has lines (Go has statements).
 * Files are read as streams: line and XML formats in bounded memory, JSON whole (up to
 * 64 MiB).
 */
#include "output_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COV_JSON_MAX ((size_t)64 << 20)
#define COV_LINE_MAX 4096

/* ---- printed totals ---- */

/* The percent before the last '%' of s ("75%", "75.00%", "75 %"); false when none. */
static bool last_percent(const char *s, double *out)
{
    const char *pct = strrchr(s, '%'), *p;
    char *end;
    double v;

    if (!pct)
        return false;
    p = pct;
    while (p > s && p[-1] == ' ')
        p--;
    while (p > s && ((p[-1] >= '0' && p[-1] <= '9') || p[-1] == '.'))
        p--;
    v = strtod(p, &end);
    while (*end == ' ')
        end++;
    if (end != pct || !(v >= 0) || v > 100)
        return false;
    *out = v;
    return true;
}

/* Counts in reports are at most 2^40 (a trillion lines), so sums of them never overflow. */
#define COUNT_MAX ((int64_t)1 << 40)

static bool starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void found(struct rein__cov_lines *c, const char *tool, double v)
{
    c->found = true;
    c->percent = v;
    snprintf(c->tool, sizeof(c->tool), "%s", tool);
}

/* "All files |   75 |   100 |   100 |   75 |": the fourth number is % Lines. */
static bool istanbul_table(const char *s, double *out)
{
    const char *p = strchr(s, '|');
    char *end;

    for (int col = 0; p && col < 4; col++) {
        double v = strtod(p + 1, &end);
        if (end == p + 1)
            return false;
        if (col == 3) {
            *out = v;
            return v >= 0 && v <= 100;
        }
        p = strchr(end, '|');
    }
    return false;
}

void rein__coverage_line(struct rein__cov_lines *c, const char *s)
{
    const char *t = s;
    double v;

    while (*t == ' ' || *t == '\t')
        t++;
    if (starts(s, "TOTAL ") && last_percent(s, &v)) {
        found(c, "total", v);
    } else if ((starts(t, "lines......: ") || starts(s, "lines: ")) && last_percent(s, &v)) {
        /* lcov's percent is the first one; "(6 of 8 lines)" has none after it. */
        found(c, "lines", v);
    } else if (starts(s, "total:") && strstr(s, "(statements)") && last_percent(s, &v)) {
        found(c, "go", v);
    } else if (strstr(s, "coverage: ") && strstr(s, "% of statements")) {
        const char *p = strstr(s, "coverage: ") + 10;
        char *end;
        v = strtod(p, &end);
        if (end != p && starts(end, "% of statements") && v >= 0 && v <= 100) {
            /* One line per package: the lowest one is what a threshold must hold for. */
            if (!(c->found && strcmp(c->tool, "go-packages") == 0 && c->percent < v))
                found(c, "go-packages", v);
        }
    } else if (starts(s, "Lines        : ") && last_percent(s, &v)) {
        found(c, "istanbul", v);
    } else if (starts(t, "All files ") && istanbul_table(t, &v)) {
        found(c, "istanbul", v);
    }
}

/* ---- report files ---- */

enum cov_kind { CK_UNKNOWN, CK_JSON, CK_XML, CK_GO, CK_LINES };

struct goblock {
    uint64_t key; /* 0: empty slot */
    int64_t stmts;
    bool covered;
};

struct rein__covr {
    struct rein__xml_guard x; /* first: the XML handlers get a pointer to it */
    enum cov_kind kind;
    bool failed;
    char why[200];
    /* JSON */
    struct rein_buf json;
    /* lines (lcov tracefile, Go profile, printed totals) */
    char line[COV_LINE_MAX];
    size_t line_len;
    int64_t lf, lh;                             /* totals of finished records */
    int64_t rec_da, rec_da_hit, rec_lf, rec_lh; /* the record being read */
    bool lcov;
    struct rein__cov_lines printed;
    bool go_mode_seen;
    struct goblock *blocks;
    size_t nblocks, cap;
    /* XML */
    int depth;
    bool xml_done;
    char root[16];
    bool have_pct;
    double pct;
    int64_t covered, total;
};

static void cov_fail(struct rein__covr *r, const char *why)
{
    if (!r->failed)
        snprintf(r->why, sizeof(r->why), "%s", why);
    r->failed = true;
}

/* FNV-1a, never 0. */
static uint64_t hash_key(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;

    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h ? h : 1;
}

static bool go_grow(struct rein__covr *r)
{
    size_t cap = r->cap ? r->cap * 2 : 1024;
    struct goblock *b = rein_calloc(cap, sizeof(*b));

    if (!b)
        return false;
    for (size_t i = 0; i < r->cap; i++) {
        if (!r->blocks[i].key)
            continue;
        size_t k = (size_t)(r->blocks[i].key & (cap - 1));
        while (b[k].key)
            k = (k + 1) & (cap - 1);
        b[k] = r->blocks[i];
    }
    rein_free(r->blocks);
    r->blocks = b;
    r->cap = cap;
    return true;
}

/* "example.com/calc/calc.go:3.24,5.2 1 1": file:start,end numStmts count. */
static void go_line(struct rein__covr *r, const char *s)
{
    const char *sp = strrchr(s, ' '), *sp2;
    int64_t stmts, count;
    char *end;
    uint64_t key;
    size_t k;

    if (starts(s, "mode: ")) {
        r->go_mode_seen = true;
        return;
    }
    if (!*s)
        return;
    if (!sp || sp == s) {
        cov_fail(r, "a Go coverage profile line is not \"file:start,end stmts count\"");
        return;
    }
    sp2 = sp - 1;
    while (sp2 > s && *sp2 != ' ')
        sp2--;
    stmts = strtoll(sp2 + 1, &end, 10);
    if (sp2 == s || end != sp || stmts < 0 || stmts > COUNT_MAX) {
        cov_fail(r, "a Go coverage profile line is not \"file:start,end stmts count\"");
        return;
    }
    count = strtoll(sp + 1, &end, 10);
    if (*end || count < 0) {
        cov_fail(r, "a Go coverage profile line is not \"file:start,end stmts count\"");
        return;
    }
    if ((r->nblocks + 1) * 2 > r->cap && !go_grow(r)) {
        cov_fail(r, "out of memory");
        return;
    }
    key = hash_key(s, (size_t)(sp2 - s));
    k = (size_t)(key & (r->cap - 1));
    while (r->blocks[k].key && r->blocks[k].key != key)
        k = (k + 1) & (r->cap - 1);
    if (!r->blocks[k].key) {
        r->blocks[k].key = key;
        r->blocks[k].stmts = stmts;
        r->nblocks++;
    }
    r->blocks[k].covered |= count > 0;
}

/* Adds a finished lcov record's lines to the totals. */
static void end_record(struct rein__covr *r)
{
    r->lf += r->rec_da ? r->rec_da : r->rec_lf;
    r->lh += r->rec_da ? r->rec_da_hit : r->rec_lh;
    r->rec_da = r->rec_da_hit = r->rec_lf = r->rec_lh = 0;
    if (r->lf > COUNT_MAX || r->lh > COUNT_MAX)
        cov_fail(r, "the lcov totals are larger than any real project");
}

/*
 * lcov tracefile records (geninfo(1)): per source file, DA:<line>,<count> for every
 * instrumented line, and LF/LH with their totals, which some geninfo versions leave out:
 * the DA lines count when a record has them, LF/LH otherwise. Other lines may be printed
 * totals.
 */
static void text_line(struct rein__covr *r, const char *s)
{
    char *end;
    int64_t v;

    if (starts(s, "DA:")) {
        const char *comma = strchr(s + 3, ',');
        v = comma ? strtoll(comma + 1, &end, 10) : -1;
        if (!comma || v < 0 || (*end && *end != ',')) {
            cov_fail(r, "an lcov DA record is not \"DA:line,count\"");
            return;
        }
        r->lcov = true;
        r->rec_da++;
        r->rec_da_hit += v > 0;
    } else if (starts(s, "LF:") || starts(s, "LH:")) {
        v = strtoll(s + 3, &end, 10);
        if (*end || v < 0 || v > COUNT_MAX) {
            cov_fail(r, "an lcov LF/LH record is not a count");
            return;
        }
        r->lcov = true;
        if (s[1] == 'F')
            r->rec_lf += v;
        else
            r->rec_lh += v;
        if (r->rec_lf > COUNT_MAX || r->rec_lh > COUNT_MAX)
            cov_fail(r, "the lcov totals are larger than any real project");
    } else if (strcmp(s, "end_of_record") == 0) {
        r->lcov = true;
        end_record(r);
    } else if (starts(s, "SF:") || starts(s, "TN:")) {
        r->lcov = true;
    } else {
        rein__coverage_line(&r->printed, s);
    }
}

static void on_line(struct rein__covr *r)
{
    r->line[r->line_len] = '\0';
    while (r->line_len && (r->line[r->line_len - 1] == '\r' || r->line[r->line_len - 1] == ' '))
        r->line[--r->line_len] = '\0';
    if (r->kind == CK_GO)
        go_line(r, r->line);
    else
        text_line(r, r->line);
    r->line_len = 0;
}

static int64_t attr_int(const XML_Char **atts, const char *name, bool *ok)
{
    for (size_t i = 0; atts[i]; i += 2) {
        if (strcmp(atts[i], name) == 0) {
            char *end;
            long long v = strtoll(atts[i + 1], &end, 10);
            if (*end || v < 0)
                *ok = false;
            return v;
        }
    }
    *ok = false;
    return 0;
}

static void xml_start(void *ud, const XML_Char *name, const XML_Char **atts)
{
    struct rein__covr *r = ud;

    r->depth++;
    if (r->depth == 1) {
        snprintf(r->root, sizeof(r->root), "%s", name);
        if (strcmp(name, "coverage") == 0) {
            /* Cobertura: line-rate is a fraction. */
            for (size_t i = 0; atts[i]; i += 2) {
                if (strcmp(atts[i], "line-rate") == 0) {
                    char *end;
                    double v = strtod(atts[i + 1], &end);
                    if (*end || !(v >= 0) || v > 1) {
                        cov_fail(r, "Cobertura line-rate is not a fraction from 0 to 1");
                    } else {
                        r->pct = v * 100;
                        r->have_pct = true;
                    }
                }
            }
        } else if (strcmp(name, "report") != 0) {
            cov_fail(r, "an XML file whose root is neither <report> (JaCoCo) nor <coverage> "
                        "(Cobertura)");
            XML_StopParser(r->x.parser, XML_FALSE);
        }
        return;
    }
    /* JaCoCo's report-wide counters are the children of <report> itself. */
    if (r->depth == 2 && strcmp(r->root, "report") == 0 && strcmp(name, "counter") == 0) {
        bool ok = true, is_line = false;
        for (size_t i = 0; atts[i]; i += 2)
            is_line |= strcmp(atts[i], "type") == 0 && strcmp(atts[i + 1], "LINE") == 0;
        if (is_line) {
            int64_t missed = attr_int(atts, "missed", &ok), cov = attr_int(atts, "covered", &ok);
            if (!ok) {
                cov_fail(r, "a JaCoCo counter's missed/covered is not a count");
                return;
            }
            r->covered = cov;
            r->total = cov + missed;
            r->pct = r->total ? 100.0 * (double)cov / (double)r->total : 100.0;
            r->have_pct = true;
        }
    }
}

static void xml_end(void *ud, const XML_Char *name)
{
    struct rein__covr *r = ud;

    (void)name;
    if (--r->depth == 0)
        r->xml_done = true;
}

static void xml_feed(struct rein__covr *r, const char *data, size_t len, bool final)
{
    if (r->failed || r->xml_done)
        return;
    if (XML_Parse(r->x.parser, data, (int)len, final) == XML_STATUS_ERROR && !r->xml_done) {
        char why[160];
        if (r->failed)
            return;
        if (r->x.entity) {
            cov_fail(r, "the XML declares an entity; coverage reports have none");
            return;
        }
        snprintf(why, sizeof(why), "malformed XML at line %lu: %s",
                 (unsigned long)XML_GetCurrentLineNumber(r->x.parser),
                 XML_ErrorString(XML_GetErrorCode(r->x.parser)));
        cov_fail(r, why);
    }
}

/* The kind from the first non-blank byte (and the first line for a Go profile). */
static bool detect(struct rein__covr *r, const char *data, size_t len, size_t *skip)
{
    size_t i = 0;

    while (i < len && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r'))
        i++;
    *skip = i;
    if (i == len)
        return false;
    if (data[i] == '{') {
        r->kind = CK_JSON;
    } else if (data[i] == '<') {
        r->kind = CK_XML;
        if (!rein__xml_start(&r->x, xml_start, xml_end, NULL)) {
            cov_fail(r, "out of memory");
            return true;
        }
    } else if (len - i >= 6 && memcmp(data + i, "mode: ", 6) == 0) {
        r->kind = CK_GO;
    } else {
        r->kind = CK_LINES;
    }
    return true;
}

static void covr_feed(struct rein__covr *r, const char *data, size_t len)
{
    size_t skip = 0;

    if (r->failed)
        return;
    if (r->kind == CK_UNKNOWN) {
        if (!detect(r, data, len, &skip))
            return;
        data += skip;
        len -= skip;
    }
    switch (r->kind) {
    case CK_JSON:
        if (rein_buf_add(&r->json, data, len))
            cov_fail(r, "a JSON coverage report larger than 64 MiB is not read");
        return;
    case CK_XML:
        xml_feed(r, data, len, false);
        return;
    case CK_GO:
    case CK_LINES:
        for (size_t i = 0; i < len && !r->failed; i++) {
            if (data[i] == '\n')
                on_line(r);
            else if (r->line_len < sizeof(r->line) - 1)
                r->line[r->line_len++] = data[i] ? data[i] : ' ';
        }
        return;
    case CK_UNKNOWN:
        return;
    }
}

/* A number member, also when a tool wrote it as text ("75.00"). */
static bool json_num(const json_t *v, double *out)
{
    char *end;

    if (json_is_number(v)) {
        *out = json_number_value(v);
        return true;
    }
    if (json_is_string(v)) {
        *out = strtod(json_string_value(v), &end);
        return end != json_string_value(v) && !*end;
    }
    return false;
}

static void json_report(struct rein__covr *r, struct rein_verify_coverage *out)
{
    json_error_t jerr;
    json_t *doc = json_loadb(r->json.ptr, r->json.len, 0, &jerr), *t, *lines;
    double v, cov, tot;

    if (!json_is_object(doc)) {
        char why[200];
        snprintf(why, sizeof(why), "not a JSON object: line %d: %s", jerr.line, jerr.text);
        cov_fail(r, doc ? "a JSON coverage report must be an object" : why);
        json_decref(doc);
        return;
    }
    if ((t = json_object_get(doc, "totals")) &&
        json_num(json_object_get(t, "percent_covered"), &v)) {
        snprintf(out->format, sizeof(out->format), "coverage.py");
        out->percent = v;
        out->covered = json_integer_value(json_object_get(t, "covered_lines"));
        out->total = json_integer_value(json_object_get(t, "num_statements"));
    } else if ((lines = json_object_get(json_object_get(doc, "total"), "lines"))) {
        snprintf(out->format, sizeof(out->format), "istanbul");
        cov = json_number_value(json_object_get(lines, "covered"));
        tot = json_number_value(json_object_get(lines, "total"));
        /* Istanbul writes "Unknown" for a pct of nothing. */
        if (!json_num(json_object_get(lines, "pct"), &v))
            v = tot > 0 ? 100.0 * cov / tot : 100.0;
        out->percent = v;
        out->covered = (int64_t)cov;
        out->total = (int64_t)tot;
    } else if (json_num(json_object_get(doc, "line_percent"), &v)) {
        snprintf(out->format, sizeof(out->format), "gcovr");
        out->percent = v;
        out->covered = json_integer_value(json_object_get(doc, "line_covered"));
        out->total = json_integer_value(json_object_get(doc, "line_total"));
    } else {
        cov_fail(r, "a JSON file that is none of coverage.py's `coverage json` (totals), "
                    "Istanbul's coverage-summary.json (total.lines) or gcovr's "
                    "--json-summary (line_percent)");
    }
    json_decref(doc);
}

static void covr_finish(struct rein__covr *r, struct rein_verify_coverage *out)
{
    memset(out, 0, sizeof(*out));
    out->covered = out->total = -1;
    if (r->failed)
        return;
    switch (r->kind) {
    case CK_UNKNOWN: {
        cov_fail(r, "the file is empty");
        return;
    }
    case CK_JSON:
        json_report(r, out);
        break;
    case CK_XML:
        xml_feed(r, "", 0, true);
        if (!r->failed && !r->have_pct)
            cov_fail(r, strcmp(r->root, "report") == 0
                            ? "the JaCoCo report has no report-wide LINE counter"
                            : "the Cobertura report has no line-rate");
        snprintf(out->format, sizeof(out->format), "%s",
                 strcmp(r->root, "report") == 0 ? "jacoco" : "cobertura");
        out->percent = r->pct;
        if (r->total > 0) {
            out->covered = r->covered;
            out->total = r->total;
        }
        break;
    case CK_GO:
    case CK_LINES:
        if (r->line_len)
            on_line(r);
        if (r->failed)
            break;
        end_record(r);
        if (r->failed)
            break;
        if (r->kind == CK_GO) {
            int64_t all = 0, hit = 0;
            for (size_t i = 0; i < r->cap; i++) {
                if (!r->blocks[i].key)
                    continue;
                all += r->blocks[i].stmts;
                hit += r->blocks[i].covered ? r->blocks[i].stmts : 0;
                if (all > COUNT_MAX) {
                    cov_fail(r, "the Go profile counts more statements than any real project");
                    break;
                }
            }
            snprintf(out->format, sizeof(out->format), "go");
            out->covered = hit;
            out->total = all;
            out->percent = all ? 100.0 * (double)hit / (double)all : 100.0;
        } else if (r->lcov) {
            snprintf(out->format, sizeof(out->format), "lcov");
            out->covered = r->lh;
            out->total = r->lf;
            out->percent = r->lf ? 100.0 * (double)r->lh / (double)r->lf : 100.0;
        } else if (r->printed.found) {
            snprintf(out->format, sizeof(out->format), "text");
            out->percent = r->printed.percent;
        } else {
            cov_fail(r, "no coverage total found (not a coverage.py, Istanbul or gcovr JSON "
                        "summary, an lcov tracefile, a Go profile, JaCoCo or Cobertura XML, "
                        "or a printed total)");
        }
        break;
    }
    if (!r->failed && (!(out->percent >= 0) || out->percent > 100 || isnan(out->percent)))
        cov_fail(r, "the coverage is not a percentage from 0 to 100");
}

static void covr_release(struct rein__covr *r)
{
    rein_buf_release(&r->json);
    rein_free(r->blocks);
    if (r->x.parser)
        XML_ParserFree(r->x.parser);
}

static rein_err covr_result(struct rein__covr *r, struct rein_verify_coverage *out,
                            const char *name, rein_error *err)
{
    covr_finish(r, out);
    covr_release(r);
    if (!r->failed)
        return REIN_OK;
    memset(out, 0, sizeof(*out));
    if (strcmp(r->why, "out of memory") == 0)
        return rein_error_set(err, REIN_ENOMEM, "%s: out of memory", name);
    return rein_error_set(err, REIN_EPARSE, "%s: %s", name, r->why);
}

rein_err rein_verify_coverage_parse(const char *text, size_t len, struct rein_verify_coverage *out,
                                    rein_error *err)
{
    struct rein__covr r;

    memset(&r, 0, sizeof(r));
    rein_buf_init(&r.json, COV_JSON_MAX);
    covr_feed(&r, text, len);
    return covr_result(&r, out, "coverage report", err);
}

rein_err rein_verify_coverage_read(const char *path, struct rein_verify_coverage *out,
                                   rein_error *err)
{
    struct rein__covr r;
    char chunk[65536];
    FILE *f = fopen(path, "rb");
    size_t n;

    memset(out, 0, sizeof(*out));
    if (!f)
        return rein_error_set(err, errno == ENOENT ? REIN_ENOTFOUND : REIN_EIO, "%s: %s", path,
                              strerror(errno));
    memset(&r, 0, sizeof(r));
    rein_buf_init(&r.json, COV_JSON_MAX);
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0 && !r.failed)
        covr_feed(&r, chunk, n);
    if (ferror(f))
        cov_fail(&r, "cannot read the file");
    fclose(f);
    return covr_result(&r, out, path, err);
}
