/*
 * Log line parsers for the log_transform skill: JSON lines, logfmt, syslog (RFC 5424,
 * RFC 3164 with or without the <PRI> prefix, and the ISO-timestamp form rsyslog writes),
 * Apache (access log in common and combined format, and the error log), and "plain" lines that
 * start with a timestamp and a level word. Each parser returns a record in one shape
 *   {format, time?, level?, message?, fields: {…}}
 * with the level normalised (trace, debug, info, warn, error, fatal), or nothing when the line
 * is not in its format: a line is never forced into a shape it does not have.
 *
 * The regular expressions are compiled once, on first use, and shared by all threads.
 */
#include "skills_int.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum pattern {
    P_SYSLOG5424,
    P_SYSLOG3164,
    P_APACHE_ACCESS,
    P_APACHE_ERROR,
    P_PLAIN,
    P_LEVEL_WORD,
    P_COUNT,
};

static const char *const pattern_text[P_COUNT] = {
    [P_SYSLOG5424] = "^<(\\d{1,3})>(\\d{1,2}) (\\S+) (\\S+) (\\S+) (\\S+) (\\S+) "
                     "(-|(?:\\[(?:[^\\]\"]|\"(?:[^\"\\\\]|\\\\.)*\")*\\])+)(?: (.*))?$",
    [P_SYSLOG3164] = "^(?:<(\\d{1,3})>)?((?:[A-Z][a-z]{2} [ \\d]\\d \\d\\d:\\d\\d:\\d\\d)|"
                     "(?:\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d(?:\\.\\d+)?"
                     "(?:Z|[+-]\\d\\d:?\\d\\d)?)) (\\S+) (?:([^:\\[\\s]+)(?:\\[(\\d+)\\])?: ?)?"
                     "(.*)$",
    [P_APACHE_ACCESS] = "^(\\S+) (\\S+) (\\S+) \\[([^\\]]+)\\] \"((?:[^\"\\\\]|\\\\.)*)\" "
                        "(\\d{3}) (\\d+|-)(?: \"((?:[^\"\\\\]|\\\\.)*)\" "
                        "\"((?:[^\"\\\\]|\\\\.)*)\")?.*$",
    [P_APACHE_ERROR] = "^\\[([^\\]]+)\\] \\[(?:([^:\\]]+):)?([A-Za-z0-9]+)\\]"
                       "(?: \\[pid (\\d+)(?::tid (\\d+))?\\])?(?: \\[client ([^\\]]+)\\])? "
                       "(.*)$",
    [P_PLAIN] = "^\\[?(\\d{4}-\\d\\d-\\d\\d[T ]\\d\\d:\\d\\d:\\d\\d(?:[.,]\\d+)?"
                "(?:Z|[+-]\\d\\d:?\\d\\d)?)\\]?\\s+\\[?(TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|"
                "ERROR|ERR|FATAL|CRITICAL|CRIT|SEVERE)\\]?\\s*[:|-]?\\s*(.*)$",
    [P_LEVEL_WORD] = "\\b(TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|FATAL|CRITICAL|CRIT)\\b",
};

static pcre2_code *patterns[P_COUNT];
static pthread_once_t patterns_once = PTHREAD_ONCE_INIT;

static void compile_patterns(void)
{
    for (int i = 0; i < P_COUNT; i++) {
        int errcode;
        PCRE2_SIZE off;
        uint32_t opts = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | (i == P_PLAIN ? PCRE2_CASELESS : 0);
        patterns[i] = pcre2_compile((PCRE2_SPTR)pattern_text[i], PCRE2_ZERO_TERMINATED, opts,
                                    &errcode, &off, NULL);
        if (patterns[i])
            (void)pcre2_jit_compile(patterns[i], PCRE2_JIT_COMPLETE);
    }
}

static const char *const format_names[] = {"auto", "json", "logfmt", "syslog", "apache", "plain"};

const char *rein__skills_log_format_name(enum rein__skills_log_format f)
{
    return (size_t)f < sizeof(format_names) / sizeof(format_names[0]) ? format_names[f] : "auto";
}

bool rein__skills_log_format_parse(const char *text, enum rein__skills_log_format *out)
{
    for (size_t i = 0; text && i < sizeof(format_names) / sizeof(format_names[0]); i++) {
        if (strcmp(text, format_names[i]) == 0) {
            *out = (enum rein__skills_log_format)i;
            return true;
        }
    }
    return false;
}

static const char *const level_names[] = {"trace", "debug", "info", "warn", "error", "fatal"};

int rein__skills_log_level_rank(const char *level)
{
    for (int i = 0; level && i < 6; i++) {
        if (strcmp(level, level_names[i]) == 0)
            return i;
    }
    return -1;
}

const char *rein__skills_log_level_normalize(const char *word, size_t len)
{
    static const struct {
        const char *word;
        int rank;
    } words[] = {
        {"trace", 0},       {"trc", 0},           {"debug", 1},  {"dbg", 1},   {"info", 2},
        {"information", 2}, {"informational", 2}, {"notice", 2}, {"inf", 2},   {"warn", 3},
        {"warning", 3},     {"wrn", 3},           {"error", 4},  {"err", 4},   {"fatal", 5},
        {"critical", 5},    {"crit", 5},          {"alert", 5},  {"emerg", 5}, {"emergency", 5},
        {"panic", 5},       {"severe", 5},
    };

    /* Apache's trace1 … trace8 */
    if (len == 6 && strncasecmp(word, "trace", 5) == 0 && word[5] >= '1' && word[5] <= '8')
        return level_names[0];
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        if (strlen(words[i].word) == len && strncasecmp(word, words[i].word, len) == 0)
            return level_names[words[i].rank];
    }
    return NULL;
}

/* syslog severities 0 … 7 */
static const char *severity_level(int sev)
{
    static const int rank[8] = {5, 5, 5, 4, 3, 2, 2, 1};

    return sev >= 0 && sev < 8 ? level_names[rank[sev]] : NULL;
}

/* A record under construction; any failed allocation makes the whole record fail. */
struct rec {
    json_t *obj, *fields;
    bool failed;
};

static bool rec_init(struct rec *r, enum rein__skills_log_format f)
{
    r->fields = json_object();
    r->obj = json_pack("{s:s}", "format", rein__skills_log_format_name(f));
    r->failed = !r->fields || !r->obj;
    return !r->failed;
}

static void rec_set(struct rec *r, json_t *obj, const char *key, json_t *v)
{
    if (r->failed)
        return;
    if (!v || json_object_set_new(obj, key, v))
        r->failed = true;
}

static void rec_str(struct rec *r, json_t *obj, const char *key, const char *s, size_t len)
{
    rec_set(r, obj, key, rein__json_string_lossy(s, len));
}

static json_t *rec_finish(struct rec *r, bool *oom)
{
    if (!r->failed && json_object_set_new(r->obj, "fields", r->fields) == 0) {
        r->fields = NULL;
        return r->obj;
    }
    json_decref(r->fields);
    json_decref(r->obj);
    *oom = true;
    return NULL;
}

/* ---- JSON lines ---- */

static json_t *first_key(json_t *obj, const char *const *keys)
{
    for (; *keys; keys++) {
        json_t *v = json_object_get(obj, *keys);
        if (v && !json_is_null(v))
            return v;
    }
    return NULL;
}

/* pino and bunyan write numeric levels: 10 trace … 60 fatal */
static const char *json_level(json_t *v)
{
    if (json_is_integer(v)) {
        json_int_t n = json_integer_value(v);
        return n >= 10 && n <= 60 && n % 10 == 0 ? level_names[n / 10 - 1] : NULL;
    }
    return json_is_string(v)
               ? rein__skills_log_level_normalize(json_string_value(v), json_string_length(v))
               : NULL;
}

static json_t *parse_json(const char *line, size_t len, bool *oom)
{
    static const char *const time_keys[] = {"time",     "ts",   "timestamp", "@timestamp",
                                            "datetime", "date", "t",         NULL};
    static const char *const level_keys[] = {"level",     "lvl",       "severity", "loglevel",
                                             "log.level", "levelname", NULL};
    static const char *const msg_keys[] = {"msg", "message", "log", NULL};
    json_t *doc, *v;
    struct rec r;
    const char *level;

    if (len == 0 || line[0] != '{')
        return NULL;
    doc = rein_json_parse(line, len, 0, NULL);
    if (!json_is_object(doc)) {
        json_decref(doc);
        return NULL;
    }
    if (!rec_init(&r, REIN__SKILLS_LOG_JSON)) {
        json_decref(doc);
        return rec_finish(&r, oom);
    }
    json_decref(r.fields);
    r.fields = doc;
    if ((v = first_key(doc, time_keys)))
        rec_set(&r, r.obj, "time", json_incref(v));
    if ((v = first_key(doc, level_keys)) && (level = json_level(v)))
        rec_set(&r, r.obj, "level", json_string(level));
    if ((v = first_key(doc, msg_keys)) && json_is_string(v))
        rec_set(&r, r.obj, "message", json_incref(v));
    return rec_finish(&r, oom);
}

/* ---- logfmt ---- */

static bool key_char(char c)
{
    return c > ' ' && c != '=' && c != '"' && c != 0x7f;
}

/* Reads a quoted value starting after the opening quote; returns the end (after the closing
 * quote) or NULL when the quote is not closed. The unescaped text goes to b. */
static const char *quoted(const char *p, const char *end, struct rein_buf *b, bool *oom)
{
    while (p < end && *p != '"') {
        char c = *p++;
        if (c == '\\' && p < end) {
            c = *p++;
            c = c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c;
        }
        if (rein_buf_addch(b, c))
            *oom = true;
    }
    return p < end ? p + 1 : NULL;
}

static json_t *parse_logfmt(const char *line, size_t len, bool *oom)
{
    static const char *const time_keys[] = {"time", "ts", "timestamp", "t", NULL};
    static const char *const level_keys[] = {"level", "lvl", "severity", NULL};
    static const char *const msg_keys[] = {"msg", "message", NULL};
    const char *p = line, *end = line + len;
    struct rein_buf b;
    struct rec r;
    size_t pairs = 0;
    json_t *v;
    const char *level;

    if (!rec_init(&r, REIN__SKILLS_LOG_LOGFMT))
        return rec_finish(&r, oom);
    rein_buf_init(&b, 0);
    while (p < end && !r.failed) {
        while (p < end && *p == ' ')
            p++;
        if (p >= end)
            break;
        const char *key = p;
        while (p < end && key_char(*p))
            p++;
        size_t klen = (size_t)(p - key);
        if (klen == 0 || klen > 128)
            goto not_logfmt;
        char k[129];
        memcpy(k, key, klen);
        k[klen] = '\0';
        if (p < end && *p == '=') {
            p++;
            rein_buf_reset(&b);
            if (p < end && *p == '"') {
                p = quoted(p + 1, end, &b, oom);
                if (!p)
                    goto not_logfmt;
            } else {
                const char *val = p;
                while (p < end && *p != ' ')
                    p++;
                if (rein_buf_add(&b, val, (size_t)(p - val)))
                    *oom = true;
            }
            if (p < end && *p != ' ')
                goto not_logfmt;
            rec_str(&r, r.fields, k, b.ptr, b.len);
            pairs++;
        } else if (p >= end || *p == ' ') {
            rec_set(&r, r.fields, k, json_true());
        } else {
            goto not_logfmt;
        }
    }
    rein_buf_release(&b);
    if (pairs == 0 || *oom) {
        json_decref(r.fields);
        json_decref(r.obj);
        return NULL;
    }
    if ((v = first_key(r.fields, time_keys)))
        rec_set(&r, r.obj, "time", json_incref(v));
    if ((v = first_key(r.fields, level_keys)) && (level = json_level(v)))
        rec_set(&r, r.obj, "level", json_string(level));
    if ((v = first_key(r.fields, msg_keys)))
        rec_set(&r, r.obj, "message", json_incref(v));
    return rec_finish(&r, oom);

not_logfmt:
    rein_buf_release(&b);
    json_decref(r.fields);
    json_decref(r.obj);
    return NULL;
}

/* ---- the regex formats ---- */

struct groups {
    const char *line;
    PCRE2_SIZE *ov;
    int n;
};

static bool group(const struct groups *g, int i, const char **s, size_t *len)
{
    if (i >= g->n || g->ov[2 * i] == PCRE2_UNSET)
        return false;
    *s = g->line + g->ov[2 * i];
    *len = g->ov[2 * i + 1] - g->ov[2 * i];
    return true;
}

static void rec_group(struct rec *r, json_t *obj, const char *key, const struct groups *g, int i)
{
    const char *s;
    size_t len;

    if (group(g, i, &s, &len) && !(len == 1 && s[0] == '-'))
        rec_str(r, obj, key, s, len);
}

static void rec_group_int(struct rec *r, json_t *obj, const char *key, const struct groups *g,
                          int i)
{
    const char *s;
    size_t len;
    char num[24];

    if (group(g, i, &s, &len) && len > 0 && len < sizeof(num) && s[0] != '-') {
        memcpy(num, s, len);
        num[len] = '\0';
        rec_set(r, obj, key, json_integer(strtoll(num, NULL, 10)));
    }
}

static int group_int(const struct groups *g, int i)
{
    const char *s;
    size_t len;
    int v = 0;

    if (!group(g, i, &s, &len))
        return -1;
    for (size_t k = 0; k < len && k < 4; k++)
        v = v * 10 + (s[k] - '0');
    return v;
}

/* Runs pattern p; on a match fills g and returns true. */
static bool run(enum pattern p, const char *line, size_t len, pcre2_match_data *md,
                struct groups *g)
{
    int rc;

    if (!patterns[p])
        return false;
    rc = pcre2_match(patterns[p], (PCRE2_SPTR)line, len, 0, 0, md, NULL);
    if (rc <= 0)
        return false;
    *g = (struct groups){line, pcre2_get_ovector_pointer(md), rc};
    return true;
}

/* A level word in a message (syslog lines without a priority), or NULL. */
static const char *level_in(const char *msg, size_t len, pcre2_match_data *md)
{
    struct groups g;
    const char *s;
    size_t n;

    if (!run(P_LEVEL_WORD, msg, len, md, &g) || !group(&g, 1, &s, &n))
        return NULL;
    return rein__skills_log_level_normalize(s, n);
}

static json_t *parse_syslog(const char *line, size_t len, pcre2_match_data *md, bool *oom)
{
    struct groups g;
    struct rec r;
    bool v5424;
    int pri;

    v5424 = run(P_SYSLOG5424, line, len, md, &g);
    if (!v5424 && !run(P_SYSLOG3164, line, len, md, &g))
        return NULL;
    pri = group_int(&g, 1);
    if (pri > 191)
        return NULL;
    if (!rec_init(&r, REIN__SKILLS_LOG_SYSLOG))
        return rec_finish(&r, oom);
    rec_group(&r, r.obj, "time", &g, v5424 ? 3 : 2);
    rec_group(&r, r.fields, "host", &g, v5424 ? 4 : 3);
    rec_group(&r, r.fields, "app", &g, v5424 ? 5 : 4);
    rec_group(&r, r.fields, "pid", &g, v5424 ? 6 : 5);
    if (v5424) {
        rec_group(&r, r.fields, "msgid", &g, 7);
        rec_group(&r, r.fields, "structured_data", &g, 8);
    }
    const char *msg = NULL;
    size_t mlen = 0;
    if (group(&g, v5424 ? 9 : 6, &msg, &mlen))
        rec_str(&r, r.obj, "message", msg, mlen);
    if (pri >= 0) {
        rec_set(&r, r.fields, "facility", json_integer(pri / 8));
        rec_set(&r, r.fields, "severity", json_integer(pri % 8));
        rec_set(&r, r.obj, "level", json_string(severity_level(pri % 8)));
    } else if (msg) {
        /* No priority: the match data is reused, so the groups above are done with. */
        const char *level = level_in(msg, mlen, md);
        if (level)
            rec_set(&r, r.obj, "level", json_string(level));
    }
    return rec_finish(&r, oom);
}

/* "GET /path HTTP/1.1" into method, path and protocol. */
static void split_request(struct rec *r, const char *s, size_t len)
{
    const char *sp1 = memchr(s, ' ', len);
    const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', len - (size_t)(sp1 + 1 - s)) : NULL;

    if (!sp1)
        return;
    rec_str(r, r->fields, "method", s, (size_t)(sp1 - s));
    if (sp2) {
        rec_str(r, r->fields, "path", sp1 + 1, (size_t)(sp2 - sp1 - 1));
        rec_str(r, r->fields, "protocol", sp2 + 1, len - (size_t)(sp2 + 1 - s));
    } else {
        rec_str(r, r->fields, "path", sp1 + 1, len - (size_t)(sp1 + 1 - s));
    }
}

static json_t *parse_apache(const char *line, size_t len, pcre2_match_data *md, bool *oom)
{
    struct groups g;
    struct rec r;
    const char *s;
    size_t n;

    if (run(P_APACHE_ACCESS, line, len, md, &g)) {
        int status = group_int(&g, 6);
        if (!rec_init(&r, REIN__SKILLS_LOG_APACHE))
            return rec_finish(&r, oom);
        rec_group(&r, r.obj, "time", &g, 4);
        rec_set(&r, r.obj, "level",
                json_string(status >= 500   ? "error"
                            : status >= 400 ? "warn"
                                            : "info"));
        if (group(&g, 5, &s, &n)) {
            rec_str(&r, r.obj, "message", s, n);
            split_request(&r, s, n);
        }
        rec_group(&r, r.fields, "remote_host", &g, 1);
        rec_group(&r, r.fields, "ident", &g, 2);
        rec_group(&r, r.fields, "user", &g, 3);
        rec_set(&r, r.fields, "status", json_integer(status));
        rec_group_int(&r, r.fields, "bytes", &g, 7);
        rec_group(&r, r.fields, "referer", &g, 8);
        rec_group(&r, r.fields, "user_agent", &g, 9);
        return rec_finish(&r, oom);
    }
    if (!run(P_APACHE_ERROR, line, len, md, &g) || !group(&g, 3, &s, &n))
        return NULL;
    const char *level = rein__skills_log_level_normalize(s, n);
    if (!level)
        return NULL;
    if (!rec_init(&r, REIN__SKILLS_LOG_APACHE))
        return rec_finish(&r, oom);
    rec_group(&r, r.obj, "time", &g, 1);
    rec_set(&r, r.obj, "level", json_string(level));
    rec_group(&r, r.obj, "message", &g, 7);
    rec_group(&r, r.fields, "module", &g, 2);
    rec_group_int(&r, r.fields, "pid", &g, 4);
    rec_group_int(&r, r.fields, "tid", &g, 5);
    rec_group(&r, r.fields, "client", &g, 6);
    return rec_finish(&r, oom);
}

static json_t *parse_plain(const char *line, size_t len, pcre2_match_data *md, bool *oom)
{
    struct groups g;
    struct rec r;
    const char *s;
    size_t n;

    if (!run(P_PLAIN, line, len, md, &g) || !group(&g, 2, &s, &n))
        return NULL;
    if (!rec_init(&r, REIN__SKILLS_LOG_PLAIN))
        return rec_finish(&r, oom);
    rec_group(&r, r.obj, "time", &g, 1);
    rec_set(&r, r.obj, "level", json_string(rein__skills_log_level_normalize(s, n)));
    rec_group(&r, r.obj, "message", &g, 3);
    return rec_finish(&r, oom);
}

static json_t *parse_as(enum rein__skills_log_format f, const char *line, size_t len,
                        pcre2_match_data *md, bool *oom)
{
    switch (f) {
    case REIN__SKILLS_LOG_JSON:
        return parse_json(line, len, oom);
    case REIN__SKILLS_LOG_LOGFMT:
        return parse_logfmt(line, len, oom);
    case REIN__SKILLS_LOG_SYSLOG:
        return parse_syslog(line, len, md, oom);
    case REIN__SKILLS_LOG_APACHE:
        return parse_apache(line, len, md, oom);
    case REIN__SKILLS_LOG_PLAIN:
        return parse_plain(line, len, md, oom);
    default:
        return NULL;
    }
}

json_t *rein__skills_log_parse_line(enum rein__skills_log_format f, const char *line, size_t len,
                                    bool *oom)
{
    /* The order matters for auto: the most specific shapes first; logfmt last, because many
     * free-text lines contain a key=value somewhere. */
    static const enum rein__skills_log_format order[] = {
        REIN__SKILLS_LOG_JSON, REIN__SKILLS_LOG_SYSLOG, REIN__SKILLS_LOG_APACHE,
        REIN__SKILLS_LOG_PLAIN, REIN__SKILLS_LOG_LOGFMT};
    pcre2_match_data *md;
    json_t *rec = NULL;

    *oom = false;
    pthread_once(&patterns_once, compile_patterns);
    md = pcre2_match_data_create(16, NULL);
    if (!md) {
        *oom = true;
        return NULL;
    }
    if (f != REIN__SKILLS_LOG_AUTO) {
        rec = parse_as(f, line, len, md, oom);
    } else {
        for (size_t i = 0; !rec && !*oom && i < sizeof(order) / sizeof(order[0]); i++)
            rec = parse_as(order[i], line, len, md, oom);
    }
    pcre2_match_data_free(md);
    return rec;
}
