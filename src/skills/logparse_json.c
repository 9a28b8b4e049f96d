/*
 * The structured log formats of log_transform (logparse.c): JSON lines and logfmt.
 *
 * JSON lines come from many libraries, each with its own member names: the level under
 * level/lvl/severity/levelname/@l/log.level (Zap, logrus, zerolog, Winston, slog, structlog,
 * python-json-logger, Serilog CLEF, ECS, Google Cloud), PRIORITY (journalctl -o json, a syslog
 * severity), numbers (bunyan and pino 10 … 60, GELF's syslog severities) and OpenTelemetry's
 * SeverityNumber. Docker's json-file driver (and Kubernetes node logs collected as JSON) wraps
 * each line of a container as {"log": "…\n", "stream": "stderr", "time": "…"}: that line is
 * read again, in whatever format it has.
 *
 * logfmt is key=value pairs (Heroku, Go's slog TextHandler, logrus's text formatter without
 * colours); a value may be quoted with backslash escapes.
 */
#include "logparse_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static json_t *member(json_t *obj, const char *const *keys)
{
    for (; *keys; keys++) {
        json_t *v = json_object_get(obj, *keys);
        if (v && !json_is_null(v))
            return v;
    }
    return NULL;
}

/* A level from a member's value: a word, a number, or a number written as a string. */
static const char *value_level(const json_t *v, bool otel)
{
    const char *s;
    char *end;
    long long n;

    if (json_is_integer(v))
        return rein__logparse_numeric_level(json_integer_value(v), otel);
    if (!json_is_string(v))
        return NULL;
    s = json_string_value(v);
    if (s[0] >= '0' && s[0] <= '9') {
        errno = 0;
        n = strtoll(s, &end, 10);
        return !*end && !errno ? rein__logparse_numeric_level(n, otel) : NULL;
    }
    return rein__skills_log_level_normalize(s, json_string_length(v));
}

static const char *json_level(json_t *doc)
{
    static const char *const word_keys[] = {
        "level",    "lvl",           "severity",     "loglevel", "log_level", "log.level",
        "@l",       "levelname",     "level_name",   "@level",   "Level",     "LEVEL",
        "Severity", "severity_text", "SeverityText", "PRIORITY", "priority",  "levelName",
        NULL};
    static const char *const otel_keys[] = {"SeverityNumber", "severity_number", NULL};
    json_t *v = member(doc, word_keys);
    const char *level;

    if (v && (level = value_level(v, false)))
        return level;
    if ((v = member(doc, otel_keys)) && (level = value_level(v, true)))
        return level;
    /* ECS written as nested objects: {"log": {"level": "error"}} */
    v = json_object_get(json_object_get(doc, "log"), "level");
    if (v && (level = value_level(v, false)))
        return level;
    /* Serilog's compact format leaves @l out for Information */
    if (json_object_get(doc, "@mt") || json_object_get(doc, "@m"))
        return "info";
    return NULL;
}

/* Docker's json-file line: {"log": "…", "stream": "stdout", "time": "…"}. */
static bool is_docker(json_t *doc)
{
    return json_is_string(json_object_get(doc, "log")) &&
           (json_is_string(json_object_get(doc, "stream")) ||
            json_is_string(json_object_get(doc, "time")));
}

static json_t *docker(json_t *doc, pcre2_match_data *md, bool *oom)
{
    json_t *outer = json_object(), *v, *rec;
    const char *key;

    if (!outer) {
        *oom = true;
        return NULL;
    }
    json_object_foreach(doc, key, v)
    {
        if (strcmp(key, "log") != 0 && strcmp(key, "time") != 0 &&
            json_object_set(outer, key, v) != 0) {
            json_decref(outer);
            *oom = true;
            return NULL;
        }
    }
    v = json_object_get(doc, "log");
    rec =
        rein__logparse_wrapped(REIN__SKILLS_LOG_DOCKER, json_string_value(v), json_string_length(v),
                               outer, json_object_get(doc, "time"), md, oom);
    json_decref(outer);
    return rec;
}

json_t *rein__logparse_json(const char *line, size_t len, pcre2_match_data *md, int depth,
                            bool *oom)
{
    static const char *const time_keys[] = {
        "time", "ts", "timestamp", "@timestamp",           "@t",      "datetime",
        "date", "t",  "Timestamp", "__REALTIME_TIMESTAMP", "instant", NULL};
    static const char *const msg_keys[] = {
        "msg",  "message", "@m",          "MESSAGE", "Message", "event", "short_message",
        "body", "Body",    "textPayload", "@mt",     "log",     NULL};
    struct rein__logrec r;
    json_t *doc, *v;
    const char *level;
    size_t lead = 0;

    while (lead < len && (line[lead] == ' ' || line[lead] == '\t'))
        lead++;
    if (lead == len || line[lead] != '{')
        return NULL;
    doc = rein_json_parse(line, len, 0, NULL);
    if (!json_is_object(doc)) {
        json_decref(doc);
        return NULL;
    }
    level = json_level(doc);
    if (!level && depth == 0 && is_docker(doc)) {
        json_t *rec = docker(doc, md, oom);
        json_decref(doc);
        return rec;
    }
    if (!rein__logrec_init(&r, REIN__SKILLS_LOG_JSON)) {
        json_decref(doc);
        return rein__logrec_finish(&r, oom);
    }
    json_decref(r.fields);
    r.fields = doc; /* the record owns the document now */
    if ((v = member(doc, time_keys)))
        rein__logrec_set(&r, r.obj, "time", json_incref(v));
    if (level)
        rein__logrec_set(&r, r.obj, "level", json_string(level));
    if ((v = member(doc, msg_keys)) && json_is_string(v))
        rein__logrec_set(&r, r.obj, "message", json_incref(v));
    return rein__logrec_finish(&r, oom);
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

/* Reads the pairs of line into r.fields; false when the line is not logfmt. */
static bool logfmt_pairs(struct rein__logrec *r, const char *line, size_t len, bool *oom)
{
    const char *p = line, *end = line + len;
    struct rein_buf b;
    size_t pairs = 0;
    bool ok = true;

    rein_buf_init(&b, 0);
    while (ok && p < end && !r->failed) {
        char k[129];
        const char *key;
        size_t klen;
        while (p < end && *p == ' ')
            p++;
        if (p >= end)
            break;
        key = p;
        while (p < end && key_char(*p))
            p++;
        klen = (size_t)(p - key);
        if (klen == 0 || klen >= sizeof(k)) {
            ok = false;
            break;
        }
        memcpy(k, key, klen);
        k[klen] = '\0';
        if (p < end && *p == '=') {
            p++;
            rein_buf_reset(&b);
            if (p < end && *p == '"') {
                p = quoted(p + 1, end, &b, oom);
            } else {
                const char *val = p;
                while (p < end && *p != ' ')
                    p++;
                if (rein_buf_add(&b, val, (size_t)(p - val)))
                    *oom = true;
            }
            if (!p || (p < end && *p != ' ')) {
                ok = false;
                break;
            }
            rein__logrec_str(r, r->fields, k, b.ptr, b.len);
            pairs++;
        } else if (p >= end || *p == ' ') {
            rein__logrec_set(r, r->fields, k, json_true());
        } else {
            ok = false;
        }
    }
    rein_buf_release(&b);
    return ok && pairs > 0;
}

json_t *rein__logparse_logfmt(const char *line, size_t len, bool *oom)
{
    static const char *const time_keys[] = {"time", "ts", "timestamp", "t", "date", NULL};
    static const char *const level_keys[] = {"level",     "lvl", "severity", "loglevel",
                                             "log_level", "at",  NULL};
    static const char *const msg_keys[] = {"msg", "message", "event", "desc", NULL};
    struct rein__logrec r;
    json_t *v;
    const char *level;
    bool ok;

    if (!rein__logrec_init(&r, REIN__SKILLS_LOG_LOGFMT))
        return rein__logrec_finish(&r, oom);
    ok = logfmt_pairs(&r, line, len, oom);
    if (r.failed || *oom) {
        rein__logrec_drop(&r);
        *oom = true;
        return NULL;
    }
    if (!ok) {
        rein__logrec_drop(&r);
        return NULL;
    }
    if ((v = member(r.fields, time_keys)))
        rein__logrec_set(&r, r.obj, "time", json_incref(v));
    if ((v = member(r.fields, level_keys)) && (level = value_level(v, false)))
        rein__logrec_set(&r, r.obj, "level", json_string(level));
    if ((v = member(r.fields, msg_keys)))
        rein__logrec_set(&r, r.obj, "message", json_incref(v));
    return rein__logrec_finish(&r, oom);
}
