/*
 * Log line parsers for the log_transform skill: the format names, level normalisation, the
 * record helpers and auto detection. The parsers themselves are in logparse_json.c (JSON
 * lines, logfmt, the Docker wrapper) and logparse_text.c (syslog, Apache/nginx, Logback/Log4j,
 * Python logging, Go log, klog, the CRI wrapper and "timestamp LEVEL message" lines).
 *
 * Each parser returns a record in one shape
 *   {format, time?, level?, message?, fields: {…}}
 * with the level normalised (trace, debug, info, warn, error, fatal), or nothing when the line
 * is not in its format: a line is never forced into a shape it does not have.
 *
 * Auto detection is per line: several formats can read the same line (an ISO timestamp and a
 * word read as syslog's host, or as a timestamp and a level), so every candidate is tried in
 * order and the first record that has a level wins; a record without one is kept only when no
 * format finds a level.
 */
#include "logparse_int.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const format_names[REIN__SKILLS_LOG_COUNT] = {
    [REIN__SKILLS_LOG_AUTO] = "auto",     [REIN__SKILLS_LOG_JSON] = "json",
    [REIN__SKILLS_LOG_LOGFMT] = "logfmt", [REIN__SKILLS_LOG_SYSLOG] = "syslog",
    [REIN__SKILLS_LOG_APACHE] = "apache", [REIN__SKILLS_LOG_PLAIN] = "plain",
    [REIN__SKILLS_LOG_NGINX] = "nginx",   [REIN__SKILLS_LOG_JAVA] = "java",
    [REIN__SKILLS_LOG_PYTHON] = "python", [REIN__SKILLS_LOG_GO] = "go",
    [REIN__SKILLS_LOG_KLOG] = "klog",     [REIN__SKILLS_LOG_DOCKER] = "docker",
    [REIN__SKILLS_LOG_CRI] = "cri",
};

const char *rein__skills_log_format_name(enum rein__skills_log_format f)
{
    return (unsigned)f < REIN__SKILLS_LOG_COUNT ? format_names[f] : "auto";
}

bool rein__skills_log_format_parse(const char *text, enum rein__skills_log_format *out)
{
    for (int i = 0; text && i < REIN__SKILLS_LOG_COUNT; i++) {
        if (strcmp(text, format_names[i]) == 0) {
            *out = (enum rein__skills_log_format)i;
            return true;
        }
    }
    return false;
}

const char *const rein__logparse_levels[6] = {"trace", "debug", "info", "warn", "error", "fatal"};

int rein__skills_log_level_rank(const char *level)
{
    for (int i = 0; level && i < 6; i++) {
        if (strcmp(level, rein__logparse_levels[i]) == 0)
            return i;
    }
    return -1;
}

/*
 * The level words of the logging libraries people use, by rank. CRIT, FATAL and PANIC are one
 * rank (the program or system is going down); Java's SEVERE is its highest level short of a
 * crash and reads as error; MySQL's Note and System are informational.
 */
static const struct {
    const char *word;
    int rank;
} level_words[] = {
    {"trace", 0},       {"trc", 0},           {"finest", 0}, {"finer", 0},     {"verbose", 1},
    {"debug", 1},       {"dbg", 1},           {"fine", 1},   {"config", 1},    {"info", 2},
    {"information", 2}, {"informational", 2}, {"notice", 2}, {"inf", 2},       {"note", 2},
    {"system", 2},      {"log", 2},           {"warn", 3},   {"warning", 3},   {"wrn", 3},
    {"error", 4},       {"err", 4},           {"severe", 4}, {"fatal", 5},     {"critical", 5},
    {"crit", 5},        {"alert", 5},         {"emerg", 5},  {"emergency", 5}, {"panic", 5},
    {"dpanic", 5},      {"ftl", 5},
};

const char *rein__skills_log_level_normalize(const char *word, size_t len)
{
    /* Go's slog writes levels between the named ones as "INFO+2" or "ERROR-1". */
    for (size_t i = 1; i + 1 < len; i++) {
        if (word[i] == '+' || word[i] == '-') {
            size_t j = i + 1;
            while (j < len && word[j] >= '0' && word[j] <= '9')
                j++;
            if (j == len && j > i + 1)
                len = i;
            break;
        }
    }
    /* Apache's trace1 … trace8 */
    if (len == 6 && strncasecmp(word, "trace", 5) == 0 && word[5] >= '1' && word[5] <= '8')
        return rein__logparse_levels[0];
    for (size_t i = 0; i < REIN_ARRAY_SIZE(level_words); i++) {
        if (strlen(level_words[i].word) == len && strncasecmp(word, level_words[i].word, len) == 0)
            return rein__logparse_levels[level_words[i].rank];
    }
    return NULL;
}

const char *rein__logparse_severity(long sev)
{
    /* emerg, alert, crit → fatal; err; warning; notice, info → info; debug */
    static const int rank[8] = {5, 5, 5, 4, 3, 2, 2, 1};

    return sev >= 0 && sev < 8 ? rein__logparse_levels[rank[sev]] : NULL;
}

const char *rein__logparse_numeric_level(long long n, bool otel)
{
    if (otel) /* 1-4 trace, 5-8 debug, 9-12 info, 13-16 warn, 17-20 error, 21-24 fatal */
        return n >= 1 && n <= 24 ? rein__logparse_levels[(n - 1) / 4] : NULL;
    if (n >= 0 && n <= 7)
        return rein__logparse_severity((long)n);
    if (n >= 10 && n < 100) /* bunyan and pino: 10 trace … 60 fatal, custom levels between */
        return rein__logparse_levels[n >= 60 ? 5 : n / 10 - 1];
    return NULL;
}

/* ---- records ---- */

bool rein__logrec_init(struct rein__logrec *r, enum rein__skills_log_format f)
{
    r->fields = json_object();
    r->obj = json_pack("{s:s}", "format", rein__skills_log_format_name(f));
    r->failed = !r->fields || !r->obj;
    return !r->failed;
}

void rein__logrec_set(struct rein__logrec *r, json_t *obj, const char *key, json_t *v)
{
    if (r->failed) {
        json_decref(v);
        return;
    }
    if (!v || json_object_set_new(obj, key, v))
        r->failed = true;
}

void rein__logrec_str(struct rein__logrec *r, json_t *obj, const char *key, const char *s,
                      size_t len)
{
    rein__logrec_set(r, obj, key, rein__json_string_lossy(s, len));
}

json_t *rein__logrec_finish(struct rein__logrec *r, bool *oom)
{
    if (!r->failed && json_object_set_new(r->obj, "fields", r->fields) == 0) {
        r->fields = NULL;
        return r->obj;
    }
    /* set_new took fields even when it failed, unless the record had failed before */
    if (r->failed)
        json_decref(r->fields);
    json_decref(r->obj);
    *oom = true;
    return NULL;
}

void rein__logrec_drop(struct rein__logrec *r)
{
    json_decref(r->fields);
    json_decref(r->obj);
    r->fields = r->obj = NULL;
}

/* ---- wrappers ---- */

json_t *rein__logparse_wrapped(enum rein__skills_log_format f, const char *inner, size_t len,
                               json_t *outer_fields, json_t *outer_time, pcre2_match_data *md,
                               bool *oom)
{
    struct rein__logrec r;
    json_t *in, *v;
    const char *key;

    while (len > 0 && (inner[len - 1] == '\n' || inner[len - 1] == '\r'))
        len--;
    in = rein__logparse_auto(inner, len, md, 1, oom);
    if (*oom)
        return NULL;
    if (!rein__logrec_init(&r, f)) {
        json_decref(in);
        return rein__logrec_finish(&r, oom);
    }
    if (in) {
        json_object_foreach(json_object_get(in, "fields"), key, v)
        {
            rein__logrec_set(&r, r.fields, key, json_incref(v));
        }
        rein__logrec_set(&r, r.fields, "inner_format", json_incref(json_object_get(in, "format")));
        if ((v = json_object_get(in, "level")))
            rein__logrec_set(&r, r.obj, "level", json_incref(v));
        if ((v = json_object_get(in, "message")))
            rein__logrec_set(&r, r.obj, "message", json_incref(v));
        if ((v = json_object_get(in, "time")))
            outer_time = v;
    } else if (len > 0) {
        rein__logrec_str(&r, r.obj, "message", inner, len);
    }
    if (outer_time)
        rein__logrec_set(&r, r.obj, "time", json_incref(outer_time));
    json_object_foreach(outer_fields, key, v)
    {
        rein__logrec_set(&r, r.fields, key, json_incref(v));
    }
    json_decref(in);
    return rein__logrec_finish(&r, oom);
}

/* ---- detection ---- */

static json_t *parse_as(enum rein__skills_log_format f, const char *line, size_t len,
                        pcre2_match_data *md, int depth, bool *oom)
{
    switch (f) {
    case REIN__SKILLS_LOG_JSON:
        /* asked for as json, a Docker line is the JSON it is; auto unwraps it */
        return rein__logparse_json(line, len, md, depth < 0 ? 1 : depth, oom);
    case REIN__SKILLS_LOG_DOCKER: {
        json_t *rec = rein__logparse_json(line, len, md, 0, oom);
        const char *got = json_string_value(json_object_get(rec, "format"));
        if (rec && strcmp(got, "docker") != 0) {
            json_decref(rec);
            rec = NULL;
        }
        return rec;
    }
    case REIN__SKILLS_LOG_LOGFMT:
        return rein__logparse_logfmt(line, len, oom);
    case REIN__SKILLS_LOG_AUTO:
    case REIN__SKILLS_LOG_COUNT:
        return NULL;
    default:
        return rein__logparse_text(f, line, len, md, depth, oom);
    }
}

json_t *rein__logparse_auto(const char *line, size_t len, pcre2_match_data *md, int depth,
                            bool *oom)
{
    /* Most specific shapes first. Syslog after the timestamp-and-level formats: without a
     * priority its level is only a word found in the message, weaker than a level in its
     * place. logfmt last, because many free-text lines contain a key=value somewhere. JSON
     * covers the Docker wrapper. */
    static const enum rein__skills_log_format order[] = {
        REIN__SKILLS_LOG_JSON,   REIN__SKILLS_LOG_CRI,    REIN__SKILLS_LOG_KLOG,
        REIN__SKILLS_LOG_NGINX,  REIN__SKILLS_LOG_APACHE, REIN__SKILLS_LOG_JAVA,
        REIN__SKILLS_LOG_PYTHON, REIN__SKILLS_LOG_GO,     REIN__SKILLS_LOG_PLAIN,
        REIN__SKILLS_LOG_SYSLOG, REIN__SKILLS_LOG_LOGFMT};
    json_t *fallback = NULL;

    for (size_t i = 0; i < REIN_ARRAY_SIZE(order); i++) {
        json_t *rec;
        if (depth > 0 && order[i] == REIN__SKILLS_LOG_CRI)
            continue;
        rec = parse_as(order[i], line, len, md, depth, oom);
        if (*oom) {
            json_decref(fallback);
            return NULL;
        }
        if (!rec)
            continue;
        if (json_object_get(rec, "level")) {
            json_decref(fallback);
            return rec;
        }
        if (fallback)
            json_decref(rec);
        else
            fallback = rec;
    }
    return fallback;
}

json_t *rein__skills_log_parse_line(enum rein__skills_log_format f, const char *line, size_t len,
                                    bool *oom)
{
    pcre2_match_data *md;
    json_t *rec;

    *oom = false;
    rein__logparse_text_init();
    md = pcre2_match_data_create(20, NULL);
    if (!md) {
        *oom = true;
        return NULL;
    }
    if (f == REIN__SKILLS_LOG_AUTO)
        rec = rein__logparse_auto(line, len, md, 0, oom);
    else
        rec = parse_as(f, line, len, md, -1, oom); /* -1: the format was asked for */
    pcre2_match_data_free(md);
    return rec;
}
