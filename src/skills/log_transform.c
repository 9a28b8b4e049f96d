/*
 * The log_transform skill: log lines (a file inside the allowed roots, or text) parsed into
 * records (logparse.c), filtered by minimum level and a regular expression, projected to the
 * fields asked for, and counted by level and format.
 *
 * Nothing is dropped silently: every line is either a record, a blank line or an unparsable
 * line, and the counts always add up (lines = blank + parsed + unparsable); the first
 * unparsable lines are listed with their numbers so the caller can see what did not fit.
 *
 * The call's deadline and cancel handle are checked before every line, and the match filter
 * runs under PCRE2's limits (rein__skills_regex_find): a line that makes the expression hit a
 * limit ends the call with invalid_arguments naming the line, never a silent "no match".
 */
#include "skills_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_UNPARSABLE_LISTED 20

static const char log_transform_manifest[] =
    "{\"id\":\"log_transform\","
    "\"description\":\"Parse log lines (a file or text) into records with time, level, message "
    "and fields; filter by minimum level and a regular expression; count by level. Formats: "
    "JSON lines (level/severity/lvl, bunyan/pino numbers, journald, ECS, Serilog), logfmt and "
    "Go slog, syslog (RFC 3164/5424, journald short-iso), Apache and nginx access/error logs, "
    "Logback/Log4j (java), Python logging, Go log, klog, Docker and CRI container wrappers, and "
    "'timestamp LEVEL message' lines (plain); auto detects each line's format.\","
    "\"parameters\":{\"type\":\"object\",\"properties\":{"
    "\"path\":{\"type\":\"string\",\"minLength\":1,\"description\":\"Log file, relative to the "
    "allowed root\"},"
    "\"text\":{\"type\":\"string\",\"description\":\"Log lines, instead of path\"},"
    "\"format\":{\"type\":\"string\",\"enum\":[\"auto\",\"json\",\"logfmt\",\"syslog\","
    "\"apache\",\"plain\",\"nginx\",\"java\",\"python\",\"go\",\"klog\",\"docker\",\"cri\"],"
    "\"default\":\"auto\"},"
    "\"level\":{\"type\":\"string\",\"enum\":[\"trace\",\"debug\",\"info\",\"warn\",\"error\","
    "\"fatal\"],\"description\":\"Keep records at this level or more severe\"},"
    "\"match\":{\"type\":\"string\",\"minLength\":1,\"description\":\"Keep lines that match "
    "this regular expression (PCRE)\"},"
    "\"fields\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":\"Keep "
    "only these keys of each record's fields\"},"
    "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":10000,\"default\":100,"
    "\"description\":\"Most records to return (all are counted)\"}},"
    "\"additionalProperties\":false},"
    "\"output_schema\":{\"type\":\"object\",\"properties\":{"
    "\"source\":{\"type\":\"string\"},\"format\":{\"type\":\"string\"},"
    "\"records\":{\"type\":\"array\",\"items\":{\"type\":\"object\"}},"
    "\"counts\":{\"type\":\"object\"},"
    "\"unparsable_lines\":{\"type\":\"array\",\"items\":{\"type\":\"object\"}},"
    "\"truncated\":{\"type\":\"boolean\"}},"
    "\"required\":[\"source\",\"format\",\"records\",\"counts\",\"truncated\"]},"
    "\"read_only\":true,\"idempotent\":true,\"open_world\":false,\"timeout_ms\":15000,"
    "\"examples\":[{\"text\":\"show error lines in app.log\",\"arguments\":{\"path\":\"app.log\","
    "\"level\":\"error\"}},{\"text\":\"帮我分析一下 data/logs/app.log\",\"arguments\":{\"path\":"
    "\"data/logs/app.log\"}}]}";

struct transform {
    const struct rein_invocation *inv;
    struct rein_tool_reply *reply;
    rein_error *err;
    enum rein__skills_log_format format;
    int min_rank;                    /* -1: no level filter */
    struct rein__skills_regex match; /* code is NULL when there is no match filter */
    json_t *fields;                  /* borrowed: names to keep, or NULL */
    size_t limit;
    json_t *records, *unparsable_lines, *by_level, *by_format;
    size_t lines, blank, parsed, unparsable, matched;
};

/* Reads the file at real into *out (new); refuses big and binary files. */
static rein_err read_log(const struct rein__skills_roots *roots, const char *real,
                         const char *shown, char **out, size_t *len, rein_error *err)
{
    struct stat st;
    int fd = open(real, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    size_t n = 0;
    char *buf;

    if (fd < 0)
        return rein_error_set(err, REIN_EIO, "cannot open %s: %s", shown, strerror(errno));
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return rein_error_set(err, REIN_EINVALID, "%s is not a regular file", shown);
    }
    if (st.st_nlink > 1) { /* checked again on the open file: it may have changed */
        close(fd);
        return rein_error_set(err, REIN_EDENIED,
                              "%s is a hard link (a file with several names), which may be a "
                              "file outside the allowed roots",
                              shown);
    }
    if ((size_t)st.st_size > roots->max_file_bytes) {
        close(fd);
        return rein_error_set(err, REIN_EINVALID, "%s is %lld bytes; the limit is %zu bytes", shown,
                              (long long)st.st_size, roots->max_file_bytes);
    }
    buf = rein_malloc((size_t)st.st_size + 1);
    if (!buf) {
        close(fd);
        return rein_error_set(err, REIN_ENOMEM, "out of memory reading %s", shown);
    }
    while (n < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + n, (size_t)st.st_size - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    if (memchr(buf, '\0', n)) {
        rein_free(buf);
        return rein_error_set(err, REIN_EINVALID, "%s is a binary file, not a log", shown);
    }
    *out = buf;
    *len = n;
    return REIN_OK;
}

static rein_err bump(json_t *counts, const char *key)
{
    json_t *v = json_object_get(counts, key);

    if (v)
        return json_integer_set(v, json_integer_value(v) + 1) ? REIN_ENOMEM : REIN_OK;
    return json_object_set_new(counts, key, json_integer(1)) ? REIN_ENOMEM : REIN_OK;
}

/* Keeps only the requested keys of the record's fields. */
static rein_err project(json_t *rec, json_t *keep)
{
    json_t *fields = json_object_get(rec, "fields"), *out = json_object(), *name;
    size_t i;

    if (!out)
        return REIN_ENOMEM;
    json_array_foreach(keep, i, name)
    {
        json_t *v = json_object_get(fields, json_string_value(name));
        if (v && json_object_set(out, json_string_value(name), v)) {
            json_decref(out);
            return REIN_ENOMEM;
        }
    }
    return json_object_set_new(rec, "fields", out) ? REIN_ENOMEM : REIN_OK;
}

static rein_err unparsable(struct transform *t, size_t lineno, const char *line, size_t len)
{
    char shown[201];

    t->unparsable++;
    if (json_array_size(t->unparsable_lines) >= MAX_UNPARSABLE_LISTED)
        return REIN_OK;
    rein__skills_snippet(line, len, shown, sizeof(shown));
    return json_array_append_new(t->unparsable_lines,
                                 json_pack("{s:I, s:s}", "line", (json_int_t)lineno, "text", shown))
               ? REIN_ENOMEM
               : REIN_OK;
}

/* Runs the match filter on a line: true when it matches; *rc set (err filled) on a limit,
 * the deadline or a cancel. */
static bool keeps(struct transform *t, size_t lineno, const char *line, size_t len, rein_err *rc)
{
    int m = rein__skills_regex_find(&t->match, line, len, t->inv, t->reply, t->err);

    if (m < 0) {
        *rc = (rein_err)m;
        if (*rc == REIN_EINVALID && t->err) {
            char msg[sizeof(t->err->msg)];
            snprintf(msg, sizeof(msg), "%s", t->err->msg);
            rein_error_set(t->err, REIN_EINVALID, "line %zu: %s", lineno, msg);
        }
    }
    return m == 1;
}

static rein_err one_line(struct transform *t, size_t lineno, const char *line, size_t len)
{
    bool oom = false;
    json_t *rec;
    const char *level;
    rein_err rc = REIN_OK;

    t->lines++;
    if (len > 0 && line[len - 1] == '\r')
        len--;
    size_t lead = 0;
    while (lead < len && (line[lead] == ' ' || line[lead] == '\t'))
        lead++;
    if (lead == len) {
        t->blank++;
        return REIN_OK;
    }
    rec = rein__skills_log_parse_line(t->format, line, len, &oom);
    if (oom)
        return REIN_ENOMEM;
    if (!rec)
        return unparsable(t, lineno, line, len);
    t->parsed++;
    level = json_string_value(json_object_get(rec, "level"));
    if ((t->min_rank >= 0 && rein__skills_log_level_rank(level) < t->min_rank) ||
        (t->match.code && !keeps(t, lineno, line, len, &rc))) {
        json_decref(rec);
        return rc;
    }
    t->matched++;
    if (bump(t->by_level, level ? level : "unknown") ||
        bump(t->by_format, json_string_value(json_object_get(rec, "format"))))
        rc = REIN_ENOMEM;
    if (!rc && json_array_size(t->records) < t->limit) {
        if (json_object_set_new(rec, "line", json_integer((json_int_t)lineno)) ||
            (t->fields && project(rec, t->fields)) || json_array_append(t->records, rec))
            rc = REIN_ENOMEM;
    }
    json_decref(rec);
    return rc;
}

static rein_err run_lines(struct transform *t, const char *text, size_t len, rein_error *err)
{
    size_t lineno = 0, pos = 0;

    while (pos < len) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - text) : len;
        rein_err rc;
        lineno++;
        rc = rein_invocation_check(t->inv, err);
        if (!rc)
            rc = one_line(t, lineno, text + pos, end - pos);
        if (rc == REIN_ENOMEM)
            return rein_error_set(err, REIN_ENOMEM, "out of memory at line %zu", lineno);
        if (rc)
            return rc;
        pos = end + 1;
    }
    return REIN_OK;
}

static json_t *report(const struct transform *t, const char *source)
{
    return json_pack("{s:s, s:s, s:O, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:O, s:O}, s:O, s:b}",
                     "source", source, "format", rein__skills_log_format_name(t->format), "records",
                     t->records, "counts", "lines", (json_int_t)t->lines, "blank",
                     (json_int_t)t->blank, "parsed", (json_int_t)t->parsed, "unparsable",
                     (json_int_t)t->unparsable, "matched", (json_int_t)t->matched, "returned",
                     (json_int_t)json_array_size(t->records), "by_level", t->by_level, "by_format",
                     t->by_format, "unparsable_lines", t->unparsable_lines, "truncated",
                     t->matched > json_array_size(t->records));
}

/* The text to read: the file at path (resolved in the roots) or the text argument. */
static rein_err source_text(const struct rein__skills_roots *roots,
                            const struct rein_invocation *inv, struct rein_tool_reply *reply,
                            char **owned, const char **text, size_t *len, rein_error *err)
{
    json_t *path = json_object_get(inv->args, "path"), *txt = json_object_get(inv->args, "text");
    char *real = NULL;
    rein_err rc;

    *owned = NULL;
    if ((path != NULL) == (txt != NULL)) {
        reply->details =
            json_pack("[{s:s, s:s}]", "path", "", "message", "needs exactly one of path and text");
        return rein_error_set(err, REIN_EINVALID, "give either path or text (exactly one)");
    }
    if (txt) {
        *text = json_string_value(txt);
        *len = json_string_length(txt);
        return REIN_OK;
    }
    rc = rein__skills_roots_resolve(roots, json_string_value(path), "path", &real, err);
    if (rc == REIN_ENOTFOUND || rc == REIN_EDENIED) {
        reply->details =
            json_pack("[{s:s, s:s}]", "path", "/path", "message",
                      rc == REIN_EDENIED ? "is outside the allowed roots" : "does not exist");
        return rc == REIN_ENOTFOUND
                   ? rein_error_set(err, REIN_EINVALID, "path \"%s\" does not exist",
                                    json_string_value(path))
                   : rc;
    }
    if (rc)
        return rc;
    rc = read_log(roots, real, json_string_value(path), owned, len, err);
    rein_free(real);
    *text = *owned;
    return rc;
}

static rein_err log_transform_run(void *userdata, const struct rein_invocation *inv,
                                  struct rein_tool_reply *reply, rein_error *err)
{
    const struct rein__skills_roots *roots = userdata;
    struct transform t = {.inv = inv, .reply = reply, .err = err, .min_rank = -1};
    const char *match = json_string_value(json_object_get(inv->args, "match"));
    const char *text = NULL;
    char *owned = NULL;
    size_t len = 0;
    rein_err rc;

    if (!rein__skills_log_format_parse(json_string_value(json_object_get(inv->args, "format")),
                                       &t.format))
        t.format = REIN__SKILLS_LOG_AUTO;
    t.min_rank =
        rein__skills_log_level_rank(json_string_value(json_object_get(inv->args, "level")));
    t.fields = json_object_get(inv->args, "fields");
    t.limit = (size_t)json_integer_value(json_object_get(inv->args, "limit"));
    if (t.limit == 0)
        t.limit = 100;
    rc = source_text(roots, inv, reply, &owned, &text, &len, err);
    if (!rc && match)
        rc = rein__skills_regex_compile(&t.match, match, PCRE2_UCP, "match", "/match", reply, err);
    t.records = json_array();
    t.unparsable_lines = json_array();
    t.by_level = json_object();
    t.by_format = json_object();
    if (!rc && (!t.records || !t.unparsable_lines || !t.by_level || !t.by_format))
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
    if (!rc)
        rc = run_lines(&t, text, len, err);
    if (!rc) {
        json_t *path = json_object_get(inv->args, "path");
        reply->output = report(&t, path ? json_string_value(path) : "text");
        if (!reply->output)
            rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
    }
    json_decref(t.records);
    json_decref(t.unparsable_lines);
    json_decref(t.by_level);
    json_decref(t.by_format);
    rein__skills_regex_free(&t.match);
    rein_free(owned);
    return rc;
}

rein_err rein__skills_log_transform_register(rein_registry *reg,
                                             const struct rein_skills_config *cfg, rein_error *err)
{
    struct rein__skills_roots *roots;
    rein_err rc = rein__skills_roots_new(cfg, &roots, err);

    if (rc)
        return rc;
    return rein__skills_register(reg, log_transform_manifest, log_transform_run, roots,
                                 rein__skills_roots_free, err);
}
