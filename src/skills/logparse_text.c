/*
 * The line formats of log_transform that are read with regular expressions (logparse.c):
 *
 *   syslog   RFC 5424, RFC 3164 with or without <PRI>, the ISO-timestamp form rsyslog and
 *            journalctl -o short-iso write ("2026-11-25T10:00:02+0000 host app[1]: msg")
 *   apache   access logs in common and combined format (nginx writes the same), error logs
 *   nginx    the error log ("2026/11/25 10:00:02 [error] 12#0: *1 msg, client: …")
 *   java     Logback and Log4j pattern layouts (their defaults, "%p [%t]", Spring Boot)
 *   python   logging's default "LEVEL:name:msg", "asctime - name - LEVEL - msg", Flask's
 *   go       the standard log package ("2009/11/10 23:00:00 [file.go:12: ]msg") and slog's
 *            default handler through it ("… INFO msg k=v")
 *   klog     glog/klog, what Kubernetes components write ("E1125 10:00:02.123456 1 f.go:9] …")
 *   cri      the container runtime's wrapper ("<RFC 3339> stderr F <line>"), read again inside
 *   plain    a timestamp and a level word in the ways the rest of the world writes them:
 *            "TS LEVEL msg", "[TS] [LEVEL] msg", "TS [thread] LEVEL msg", "TS pid [Level] msg"
 *            (MySQL), "[TS LEVEL target] msg" (Rust's env_logger), "LEVEL TS msg", "LEVEL: msg"
 *
 * The patterns are compiled once, on first use, and shared by all threads.
 */
#include "logparse_int.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Pieces the patterns are made of. */
#define TS_ISO                                                                                     \
    "\\d{4}-\\d\\d-\\d\\d[T ]\\d\\d:\\d\\d:\\d\\d(?:[.,]\\d{1,9})?"                                \
    "(?: ?(?:Z|[+-]\\d\\d(?::?\\d\\d)?|UTC|GMT))?"
#define TS_SLASH "\\d{4}/\\d\\d/\\d\\d[ T]\\d\\d:\\d\\d:\\d\\d(?:[.,]\\d{1,9})?"
#define TS_TIME  "\\d\\d:\\d\\d:\\d\\d(?:[.,]\\d{1,9})?"
#define TS_BSD   "[A-Z][a-z]{2} +\\d{1,2} \\d\\d:\\d\\d:\\d\\d(?:\\.\\d+)?"
#define TS_CLF   "\\d\\d/[A-Z][a-z]{2}/\\d{4}:\\d\\d:\\d\\d:\\d\\d(?: [+-]\\d{4})?"
#define TS_CTIME "[A-Z][a-z]{2} [A-Z][a-z]{2} [ \\d]\\d \\d\\d:\\d\\d:\\d\\d(?:\\.\\d+)? \\d{4}"
#define TS_ANY   "(?:" TS_ISO "|" TS_SLASH "|" TS_CLF "|" TS_CTIME "|" TS_BSD "|" TS_TIME ")"
/* Level words: upper case (what most layouts print), any case where a context makes them one. */
#define LVL_UPPER                                                                                  \
    "(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|ERR|FATAL|CRITICAL|CRIT|SEVERE|ALERT|EMERG|"    \
    "PANIC|VERBOSE|FINE|FINER|FINEST|CONFIG|DPANIC|TRC|DBG|INF|WRN|FTL|LOG)"
#define LVL_ANY     "(?i:" LVL_UPPER ")"
#define LVL_BRACKET "(?i:" LVL_UPPER "|NOTE|SYSTEM)"
#define LVL_PYTHON  "(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)"
#define LVL_JAVA    "(?:TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL|SEVERE)"

enum pattern {
    P_SYSLOG5424,
    P_SYSLOG3164,
    P_APACHE_ACCESS,
    P_APACHE_ERROR,
    P_NGINX_ERROR,
    P_NGINX_PAIR,
    P_JAVA,
    P_JAVA_LOGGER_THREAD,
    P_PYTHON_DEFAULT,
    P_PYTHON_ASCTIME,
    P_PYTHON_FLASK,
    P_GO,
    P_KLOG,
    P_CRI,
    P_PLAIN,
    P_PLAIN_LEVEL_FIRST,
    P_PLAIN_RUST,
    P_PLAIN_PREFIX,
    P_LEVEL_WORD,
    P_LEADING_LEVEL,
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
    [P_APACHE_ERROR] = "^\\[(" TS_CTIME ")\\] \\[(?:([^:\\]]+):)?([A-Za-z0-9]+)\\]"
                       "(?: \\[pid (\\d+)(?::tid (\\d+))?\\])?(?: \\[client ([^\\]]+)\\])? "
                       "(.*)$",
    [P_NGINX_ERROR] = "^(\\d{4}/\\d\\d/\\d\\d \\d\\d:\\d\\d:\\d\\d) \\[([a-z]+)\\] (\\d+)#(\\d+): "
                      "(?:\\*(\\d+) )?(.*)$",
    [P_NGINX_PAIR] = ", (client|server|request|upstream|host|referrer|subrequest): "
                     "(\"(?:[^\"\\\\]|\\\\.)*\"|[^,]*)",
    /* time (or log4j 1's relative milliseconds), [thread], LEVEL, Spring Boot's "pid ---
     * [app] [thread]", "[thread]" after the level, logger, "-" or ":", message */
    [P_JAVA] = "^\\[?(" TS_ISO "|" TS_SLASH "|" TS_TIME "|\\d+)\\]?\\s+(?:\\[([^\\]]*)\\]\\s+)?"
               "(" LVL_JAVA ")\\s+(?:(\\d+)\\s+---\\s+(?:\\[[^\\]]*\\]\\s+)?\\[\\s*([^\\]]*?)\\s*"
               "\\]\\s+)?(?:\\[([^\\]]*)\\]\\s+)?([\\w$]+(?:\\.[\\w$]+)*)\\s*(?:-|:)\\s(.*)$",
    /* Log4j's manual: "%d %p %c{1.} [%t] %m%n" */
    [P_JAVA_LOGGER_THREAD] = "^(" TS_ISO ")\\s+(" LVL_JAVA ")\\s+([\\w$]+(?:\\.[\\w$]+)*)\\s+"
                             "\\[([^\\]]*)\\]\\s(.*)$",
    [P_PYTHON_DEFAULT] = "^(" LVL_PYTHON "):([^:\\s][^:]*):(.*)$",
    [P_PYTHON_ASCTIME] = "^\\[?(" TS_ISO ")\\]?\\s*[-|:]\\s*([^\\s|]+)\\s*[-|:]\\s*(" LVL_PYTHON
                         ")\\s*[-|:]\\s*(.*)$",
    [P_PYTHON_FLASK] = "^\\[(" TS_ISO ")\\] (" LVL_PYTHON ") in ([\\w.<>]+): (.*)$",
    [P_GO] = "^(\\d{4}/\\d\\d/\\d\\d \\d\\d:\\d\\d:\\d\\d(?:\\.\\d{1,9})?) "
             "(?:([\\w./-]+\\.go:\\d+): )?(.*)$",
    [P_KLOG] = "^([IWEF])(\\d{4} \\d\\d:\\d\\d:\\d\\d\\.\\d{6})\\s+(\\d+) ([^:\\] ]+):(\\d+)\\] "
               "?(.*)$",
    [P_CRI] = "^(\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d(?:\\.\\d{1,9})?(?:Z|[+-]\\d\\d:\\d\\d)) "
              "(stdout|stderr) ([FP])(?: (.*))?$",
    /* time, at most one token (a pid, [thread], host or logger), an optional separator, the
     * level (bracketed, in <>, or a word), the message; the token is tried last, so a level
     * word right after the time is never taken for a logger */
    [P_PLAIN] = "^\\[?(" TS_ANY ")\\]?(?:\\s+(?:\\[[^\\]]*\\]|\\d+|[\\w.\\-]+\\[\\d+\\]:?|"
                "[\\w.\\-]+))??\\s+(?:[-|:]\\s+)?(?|\\[\\s*(" LVL_BRACKET ")\\s*\\]|<(" LVL_ANY
                ")>|(" LVL_ANY ")(?=[\\s:|]|$))(?::|\\s*[-|]\\s|\\s*)\\s*(.*)$",
    [P_PLAIN_LEVEL_FIRST] = "^(?|\\[(" LVL_BRACKET ")\\]|(" LVL_UPPER "))\\s*:?\\s+\\[?(" TS_ANY
                            ")\\]?\\s*(?:[-|:]\\s+)?(.*)$",
    [P_PLAIN_RUST] = "^\\[(" TS_ISO ")\\s+(" LVL_UPPER ")\\s+([^\\]]*)\\]\\s?(.*)$",
    [P_PLAIN_PREFIX] = "^(" LVL_UPPER "):\\s+(.*)$",
    [P_LEVEL_WORD] = "\\b(TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|FATAL|CRITICAL|CRIT)\\b",
    [P_LEADING_LEVEL] = "^(?|\\[(" LVL_BRACKET ")\\]|<(" LVL_ANY ")>|(" LVL_UPPER
                        ")(?=[\\s:]|$)|([A-Z][a-z]+)(?=:))(?::|\\s)?\\s*",
};

static pcre2_code *patterns[P_COUNT];
static pthread_once_t patterns_once = PTHREAD_ONCE_INIT;

static void compile_patterns(void)
{
    for (int i = 0; i < P_COUNT; i++) {
        int errcode;
        PCRE2_SIZE off;
        patterns[i] = pcre2_compile((PCRE2_SPTR)pattern_text[i], PCRE2_ZERO_TERMINATED,
                                    PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, &errcode, &off, NULL);
        if (patterns[i])
            (void)pcre2_jit_compile(patterns[i], PCRE2_JIT_COMPLETE);
    }
}

void rein__logparse_text_init(void)
{
    pthread_once(&patterns_once, compile_patterns);
}

/* ---- matching ---- */

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

/* Sets obj[key] to group i, unless it is absent, empty or "-". */
static void rec_group(struct rein__logrec *r, json_t *obj, const char *key, const struct groups *g,
                      int i)
{
    const char *s;
    size_t len;

    if (group(g, i, &s, &len) && len > 0 && !(len == 1 && s[0] == '-'))
        rein__logrec_str(r, obj, key, s, len);
}

static long group_long(const struct groups *g, int i)
{
    const char *s;
    size_t len;
    long v = 0;

    if (!group(g, i, &s, &len) || len == 0 || len > 18)
        return -1;
    for (size_t k = 0; k < len; k++) {
        if (s[k] < '0' || s[k] > '9')
            return -1;
        v = v * 10 + (s[k] - '0');
    }
    return v;
}

static void rec_group_int(struct rein__logrec *r, json_t *obj, const char *key,
                          const struct groups *g, int i)
{
    long v = group_long(g, i);

    if (v >= 0)
        rein__logrec_set(r, obj, key, json_integer(v));
}

/* Sets the record's level from the word in group i; false when it is not a level word. */
static bool rec_level(struct rein__logrec *r, const struct groups *g, int i)
{
    const char *s, *level;
    size_t len;

    if (!group(g, i, &s, &len) || !(level = rein__skills_log_level_normalize(s, len)))
        return false;
    rein__logrec_set(r, r->obj, "level", json_string(level));
    return true;
}

/* Runs pattern p from offset start; on a match fills g and returns true. */
static bool run(enum pattern p, const char *line, size_t len, size_t start, pcre2_match_data *md,
                struct groups *g)
{
    int rc;

    if (!patterns[p])
        return false;
    rc = pcre2_match(patterns[p], (PCRE2_SPTR)line, len, start, 0, md, NULL);
    if (rc <= 0)
        return false;
    *g = (struct groups){line, pcre2_get_ovector_pointer(md), rc};
    return true;
}

/* A level word anywhere in a message (syslog lines without a priority), or NULL. */
static const char *level_in(const char *msg, size_t len, pcre2_match_data *md)
{
    struct groups g;
    const char *s;
    size_t n;

    if (!run(P_LEVEL_WORD, msg, len, 0, md, &g) || !group(&g, 1, &s, &n))
        return NULL;
    return rein__skills_log_level_normalize(s, n);
}

/* ---- syslog ---- */

static json_t *parse_syslog(const char *line, size_t len, pcre2_match_data *md, bool *oom)
{
    struct groups g;
    struct rein__logrec r;
    const char *msg = NULL;
    size_t mlen = 0;
    bool v5424;
    long pri;

    v5424 = run(P_SYSLOG5424, line, len, 0, md, &g);
    if (!v5424 && !run(P_SYSLOG3164, line, len, 0, md, &g))
        return NULL;
    pri = group_long(&g, 1);
    if (pri > 191)
        return NULL;
    if (!rein__logrec_init(&r, REIN__SKILLS_LOG_SYSLOG))
        return rein__logrec_finish(&r, oom);
    rec_group(&r, r.obj, "time", &g, v5424 ? 3 : 2);
    rec_group(&r, r.fields, "host", &g, v5424 ? 4 : 3);
    rec_group(&r, r.fields, "app", &g, v5424 ? 5 : 4);
    rec_group(&r, r.fields, "pid", &g, v5424 ? 6 : 5);
    if (v5424) {
        rec_group(&r, r.fields, "msgid", &g, 7);
        rec_group(&r, r.fields, "structured_data", &g, 8);
    }
    if (group(&g, v5424 ? 9 : 6, &msg, &mlen))
        rein__logrec_str(&r, r.obj, "message", msg, mlen);
    if (pri >= 0) {
        rein__logrec_set(&r, r.fields, "facility", json_integer(pri / 8));
        rein__logrec_set(&r, r.fields, "severity", json_integer(pri % 8));
        rein__logrec_set(&r, r.obj, "level", json_string(rein__logparse_severity(pri % 8)));
    } else if (msg) {
        /* No priority: the match data is reused, so the groups above are done with. */
        const char *level = level_in(msg, mlen, md);
        if (level)
            rein__logrec_set(&r, r.obj, "level", json_string(level));
    }
    return rein__logrec_finish(&r, oom);
}

/* ---- Apache and nginx ---- */

/* "GET /path HTTP/1.1" into method, path and protocol. */
static void split_request(struct rein__logrec *r, const char *s, size_t len)
{
    const char *sp1 = memchr(s, ' ', len);
    const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', len - (size_t)(sp1 + 1 - s)) : NULL;

    if (!sp1)
        return;
    rein__logrec_str(r, r->fields, "method", s, (size_t)(sp1 - s));
    if (sp2) {
        rein__logrec_str(r, r->fields, "path", sp1 + 1, (size_t)(sp2 - sp1 - 1));
        rein__logrec_str(r, r->fields, "protocol", sp2 + 1, len - (size_t)(sp2 + 1 - s));
    } else {
        rein__logrec_str(r, r->fields, "path", sp1 + 1, len - (size_t)(sp1 + 1 - s));
    }
}

static json_t *parse_access(const struct groups *g, bool *oom)
{
    struct rein__logrec r;
    long status = group_long(g, 6);
    const char *s;
    size_t n;

    if (!rein__logrec_init(&r, REIN__SKILLS_LOG_APACHE))
        return rein__logrec_finish(&r, oom);
    rec_group(&r, r.obj, "time", g, 4);
    rein__logrec_set(&r, r.obj, "level",
                     json_string(status >= 500   ? "error"
                                 : status >= 400 ? "warn"
                                                 : "info"));
    if (group(g, 5, &s, &n)) {
        rein__logrec_str(&r, r.obj, "message", s, n);
        split_request(&r, s, n);
    }
    rec_group(&r, r.fields, "remote_host", g, 1);
    rec_group(&r, r.fields, "ident", g, 2);
    rec_group(&r, r.fields, "user", g, 3);
    rein__logrec_set(&r, r.fields, "status", json_integer(status));
    rec_group_int(&r, r.fields, "bytes", g, 7);
    rec_group(&r, r.fields, "referer", g, 8);
    rec_group(&r, r.fields, "user_agent", g, 9);
    return rein__logrec_finish(&r, oom);
}

static json_t *parse_apache(const char *line, size_t len, pcre2_match_data *md, bool *oom)
{
    struct groups g;
    struct rein__logrec r;

    if (run(P_APACHE_ACCESS, line, len, 0, md, &g))
        return parse_access(&g, oom);
    if (!run(P_APACHE_ERROR, line, len, 0, md, &g))
        return NULL;
    if (!rein__logrec_init(&r, REIN__SKILLS_LOG_APACHE))
        return rein__logrec_finish(&r, oom);
    if (!rec_level(&r, &g, 3)) {
        rein__logrec_drop(&r);
        return NULL;
    }
    rec_group(&r, r.obj, "time", &g, 1);
    rec_group(&r, r.obj, "message", &g, 7);
    rec_group(&r, r.fields, "module", &g, 2);
    rec_group_int(&r, r.fields, "pid", &g, 4);
    rec_group_int(&r, r.fields, "tid", &g, 5);
    rec_group(&r, r.fields, "client", &g, 6);
    return rein__logrec_finish(&r, oom);
}

/* nginx appends ", client: …, server: …, request: "…"" to an error message: those become
 * fields, and the message ends before them. */
static void nginx_pairs(struct rein__logrec *r, const char *msg, size_t len, pcre2_match_data *md)
{
    struct groups g;
    size_t at = 0, end = len;

    while (at < len && run(P_NGINX_PAIR, msg, len, at, md, &g)) {
        const char *k, *v;
        size_t kl, vl;
        char key[16];
        if (end == len)
            end = g.ov[0];
        if (group(&g, 1, &k, &kl) && group(&g, 2, &v, &vl) && kl < sizeof(key)) {
            memcpy(key, k, kl);
            key[kl] = '\0';
            if (vl >= 2 && v[0] == '"') {
                v++;
                vl -= 2;
            }
            rein__logrec_str(r, r->fields, key, v, vl);
        }
        at = g.ov[1] > at ? g.ov[1] : at + 1;
    }
    rein__logrec_str(r, r->obj, "message", msg, end);
}

static json_t *parse_nginx(const char *line, size_t len, pcre2_match_data *md, bool forced,
                           bool *oom)
{
    struct groups g;
    struct rein__logrec r;
    const char *msg;
    size_t mlen;

    /* nginx's access log is Apache's combined format: read as nginx only when asked to */
    if (forced && run(P_APACHE_ACCESS, line, len, 0, md, &g)) {
        json_t *rec = parse_access(&g, oom);
        if (rec && json_object_set_new(rec, "format", json_string("nginx")) != 0) {
            json_decref(rec);
            *oom = true;
            return NULL;
        }
        return rec;
    }
    if (!run(P_NGINX_ERROR, line, len, 0, md, &g))
        return NULL;
    if (!rein__logrec_init(&r, REIN__SKILLS_LOG_NGINX))
        return rein__logrec_finish(&r, oom);
    if (!rec_level(&r, &g, 2)) {
        rein__logrec_drop(&r);
        return NULL;
    }
    rec_group(&r, r.obj, "time", &g, 1);
    rec_group_int(&r, r.fields, "pid", &g, 3);
    rec_group_int(&r, r.fields, "tid", &g, 4);
    rec_group_int(&r, r.fields, "connection", &g, 5);
    if (group(&g, 6, &msg, &mlen))
        nginx_pairs(&r, msg, mlen, md); /* reuses md: g is done with */
    return rein__logrec_finish(&r, oom);
}

/* ---- Logback/Log4j, Python logging ---- */

static json_t *parse_java(const char *line, size_t len, pcre2_match_data *md, bool *oom)
{
    struct groups g;
    struct rein__logrec r;
    bool thread_last = false;

    if (!run(P_JAVA, line, len, 0, md, &g)) {
        if (!run(P_JAVA_LOGGER_THREAD, line, len, 0, md, &g))
            return NULL;
        thread_last = true;
    }
    if (!rein__logrec_init(&r, REIN__SKILLS_LOG_JAVA))
        return rein__logrec_finish(&r, oom);
    rec_group(&r, r.obj, "time", &g, 1);
    if (thread_last) {
        rec_level(&r, &g, 2);
        rec_group(&r, r.obj, "message", &g, 5);
        rec_group(&r, r.fields, "thread", &g, 4);
        rec_group(&r, r.fields, "logger", &g, 3);
        return rein__logrec_finish(&r, oom);
    }
    rec_level(&r, &g, 3);
    rec_group(&r, r.obj, "message", &g, 8);
    rec_group(&r, r.fields, "thread", &g, 2);
    rec_group_int(&r, r.fields, "pid", &g, 4);
    rec_group(&r, r.fields, "thread", &g, 5);
    rec_group(&r, r.fields, "thread", &g, 6);
    rec_group(&r, r.fields, "logger", &g, 7);
    return rein__logrec_finish(&r, oom);
}

static json_t *parse_python(const char *line, size_t len, pcre2_match_data *md, bool *oom)
{
    /* group numbers of time, logger, level and message in each layout (0: absent) */
    static const struct {
        enum pattern p;
        int time, logger, level, message;
    } layouts[] = {
        {P_PYTHON_DEFAULT, 0, 2, 1, 3},
        {P_PYTHON_ASCTIME, 1, 2, 3, 4},
        {P_PYTHON_FLASK, 1, 3, 2, 4},
    };
    struct groups g;
    struct rein__logrec r;

    for (size_t i = 0; i < REIN_ARRAY_SIZE(layouts); i++) {
        if (!run(layouts[i].p, line, len, 0, md, &g))
            continue;
        if (!rein__logrec_init(&r, REIN__SKILLS_LOG_PYTHON))
            return rein__logrec_finish(&r, oom);
        rec_level(&r, &g, layouts[i].level);
        if (layouts[i].time)
            rec_group(&r, r.obj, "time", &g, layouts[i].time);
        rec_group(&r, r.obj, "message", &g, layouts[i].message);
        rec_group(&r, r.fields, "logger", &g, layouts[i].logger);
        return rein__logrec_finish(&r, oom);
    }
    return NULL;
}

/* ---- Go, klog ---- */

/* A level word at the start of msg, with the bytes it and its separator take in *used. */
static const char *leading_level(const char *msg, size_t len, pcre2_match_data *md, size_t *used)
{
    struct groups g;
    const char *s;
    size_t n;

    if (!run(P_LEADING_LEVEL, msg, len, 0, md, &g) || !group(&g, 1, &s, &n))
        return NULL;
    *used = g.ov[1];
    return rein__skills_log_level_normalize(s, n);
}

const char *rein__logparse_leading_level(const char *msg, size_t len, size_t *used)
{
    pcre2_match_data *md = pcre2_match_data_create(4, NULL);
    const char *level = NULL;

    rein__logparse_text_init();
    if (md)
        level = leading_level(msg, len, md, used);
    pcre2_match_data_free(md);
    return level;
}

static json_t *parse_go(const char *line, size_t len, pcre2_match_data *md, bool *oom)
{
    struct groups g;
    struct rein__logrec r;
    const char *msg, *level;
    size_t mlen = 0, used = 0;

    if (!run(P_GO, line, len, 0, md, &g))
        return NULL;
    if (!rein__logrec_init(&r, REIN__SKILLS_LOG_GO))
        return rein__logrec_finish(&r, oom);
    rec_group(&r, r.obj, "time", &g, 1);
    rec_group(&r, r.fields, "file", &g, 2);
    if (!group(&g, 3, &msg, &mlen))
        msg = line + len;
    /* slog's default handler writes "INFO msg k=v" through log; others "[ERROR] msg" */
    level = leading_level(msg, mlen, md, &used); /* reuses md: g is done with */
    if (level) {
        rein__logrec_set(&r, r.obj, "level", json_string(level));
        msg += used;
        mlen -= used;
    }
    rein__logrec_str(&r, r.obj, "message", msg, mlen);
    return rein__logrec_finish(&r, oom);
}

static json_t *parse_klog(const char *line, size_t len, pcre2_match_data *md, bool *oom)
{
    struct groups g;
    struct rein__logrec r;
    const char *levels = "IWEF";
    static const char *const names[] = {"info", "warn", "error", "fatal"};

    if (!run(P_KLOG, line, len, 0, md, &g))
        return NULL;
    if (!rein__logrec_init(&r, REIN__SKILLS_LOG_KLOG))
        return rein__logrec_finish(&r, oom);
    rein__logrec_set(&r, r.obj, "level",
                     json_string(names[strchr(levels, line[g.ov[2]]) - levels]));
    rec_group(&r, r.obj, "time", &g, 2);
    rec_group(&r, r.obj, "message", &g, 6);
    rec_group_int(&r, r.fields, "pid", &g, 3);
    rec_group(&r, r.fields, "file", &g, 4);
    rec_group_int(&r, r.fields, "line", &g, 5);
    return rein__logrec_finish(&r, oom);
}

/* ---- the CRI wrapper ---- */

static json_t *parse_cri(const char *line, size_t len, pcre2_match_data *md, bool *oom)
{
    struct groups g;
    json_t *outer, *time, *rec;
    const char *s, *msg = "";
    size_t n, mlen = 0;

    if (!run(P_CRI, line, len, 0, md, &g) || !group(&g, 1, &s, &n))
        return NULL;
    time = json_stringn(s, n);
    outer = json_pack("{s:s#, s:b}", "stream", line + g.ov[4], (int)(g.ov[5] - g.ov[4]), "partial",
                      line[g.ov[6]] == 'P');
    (void)group(&g, 4, &msg, &mlen);
    if (!time || !outer) {
        json_decref(time);
        json_decref(outer);
        *oom = true;
        return NULL;
    }
    rec = rein__logparse_wrapped(REIN__SKILLS_LOG_CRI, msg, mlen, outer, time, md, oom);
    json_decref(time);
    json_decref(outer);
    return rec;
}

/* ---- timestamp and level ---- */

static json_t *parse_plain(const char *line, size_t len, pcre2_match_data *md, bool *oom)
{
    /* group numbers of time, level, message and target (0: absent) in each layout */
    static const struct {
        enum pattern p;
        int time, level, message, target;
    } layouts[] = {
        {P_PLAIN_RUST, 1, 2, 4, 3},
        {P_PLAIN, 1, 2, 3, 0},
        {P_PLAIN_LEVEL_FIRST, 2, 1, 3, 0},
        {P_PLAIN_PREFIX, 0, 1, 2, 0},
    };
    struct groups g;
    struct rein__logrec r;

    for (size_t i = 0; i < REIN_ARRAY_SIZE(layouts); i++) {
        if (!run(layouts[i].p, line, len, 0, md, &g))
            continue;
        if (!rein__logrec_init(&r, REIN__SKILLS_LOG_PLAIN))
            return rein__logrec_finish(&r, oom);
        if (!rec_level(&r, &g, layouts[i].level)) {
            rein__logrec_drop(&r);
            continue;
        }
        if (layouts[i].time)
            rec_group(&r, r.obj, "time", &g, layouts[i].time);
        rec_group(&r, r.obj, "message", &g, layouts[i].message);
        if (layouts[i].target)
            rec_group(&r, r.fields, "target", &g, layouts[i].target);
        return rein__logrec_finish(&r, oom);
    }
    return NULL;
}

json_t *rein__logparse_text(enum rein__skills_log_format f, const char *line, size_t len,
                            pcre2_match_data *md, int depth, bool *oom)
{
    switch (f) {
    case REIN__SKILLS_LOG_SYSLOG:
        return parse_syslog(line, len, md, oom);
    case REIN__SKILLS_LOG_APACHE:
        return parse_apache(line, len, md, oom);
    case REIN__SKILLS_LOG_NGINX:
        return parse_nginx(line, len, md, depth < 0, oom);
    case REIN__SKILLS_LOG_JAVA:
        return parse_java(line, len, md, oom);
    case REIN__SKILLS_LOG_PYTHON:
        return parse_python(line, len, md, oom);
    case REIN__SKILLS_LOG_GO:
        return parse_go(line, len, md, oom);
    case REIN__SKILLS_LOG_KLOG:
        return parse_klog(line, len, md, oom);
    case REIN__SKILLS_LOG_CRI:
        return depth > 0 ? NULL : parse_cri(line, len, md, oom);
    case REIN__SKILLS_LOG_PLAIN:
        return parse_plain(line, len, md, oom);
    default:
        return NULL;
    }
}
