/*
 * What the log line parsers of log_transform share (logparse.c, logparse_json.c,
 * logparse_text.c; not for other files): the record under construction and the level tables.
 *
 * A record is {format, time?, level?, message?, fields: {…}}; a parser builds it with rec_*,
 * and any failed allocation makes the whole record fail (rec_finish then sets *oom).
 */
#ifndef REIN_LOGPARSE_INT_H
#define REIN_LOGPARSE_INT_H

#include "skills_int.h"

/* The normalised level names, by rank (trace 0 … fatal 5). */
extern const char *const rein__logparse_levels[6];

/* Invariants: obj and fields are NULL only when failed is set. */
struct rein__logrec {
    json_t *obj, *fields;
    bool failed;
};

bool rein__logrec_init(struct rein__logrec *r, enum rein__skills_log_format f);
/* Sets obj[key] = v (taken, may be NULL: the record fails). */
void rein__logrec_set(struct rein__logrec *r, json_t *obj, const char *key, json_t *v);
/* Sets obj[key] to len bytes of s (invalid UTF-8 replaced). */
void rein__logrec_str(struct rein__logrec *r, json_t *obj, const char *key, const char *s,
                      size_t len);
/* The record (new), or NULL with *oom set when an allocation failed. */
json_t *rein__logrec_finish(struct rein__logrec *r, bool *oom);
/* Releases a record that turned out not to be one (no *oom). */
void rein__logrec_drop(struct rein__logrec *r);

/* The level of a syslog severity 0 … 7, or NULL. */
const char *rein__logparse_severity(long sev);
/*
 * The level of a numeric level under a JSON or logfmt key: syslog severities 0 … 7 (GELF,
 * journald's PRIORITY), bunyan/pino 10 … 60 (custom levels in between round down), and
 * OpenTelemetry severity numbers 1 … 24 when otel is set. NULL when n fits none.
 */
const char *rein__logparse_numeric_level(long long n, bool otel);

/* ---- logparse_json.c ---- */
json_t *rein__logparse_json(const char *line, size_t len, pcre2_match_data *md, int depth,
                            bool *oom);
json_t *rein__logparse_logfmt(const char *line, size_t len, bool *oom);

/* ---- logparse_text.c: the formats read with regular expressions ---- */
/* Compiles the patterns once (thread-safe). */
void rein__logparse_text_init(void);
/* md: match data with at least 16 pairs. NULL when the line is not in format f. */
json_t *rein__logparse_text(enum rein__skills_log_format f, const char *line, size_t len,
                            pcre2_match_data *md, int depth, bool *oom);
/* A level word at the start of msg ("ERROR", "[warn]", "E:"), with its length in *used. */
const char *rein__logparse_leading_level(const char *msg, size_t len, size_t *used);

/* ---- logparse.c ---- */
/* Parses line with auto detection at depth (a wrapper's inner line is depth 1: no wrappers). */
json_t *rein__logparse_auto(const char *line, size_t len, pcre2_match_data *md, int depth,
                            bool *oom);
/*
 * The record of a wrapper (docker, cri) around inner text: the inner line parsed (auto, no
 * wrappers), its time, level and message lifted, its fields kept with inner_format, and the
 * wrapper's own fields (borrowed, copied in) added; outer_time is used when the inner line has
 * no time.
 */
json_t *rein__logparse_wrapped(enum rein__skills_log_format f, const char *inner, size_t len,
                               json_t *outer_fields, json_t *outer_time, pcre2_match_data *md,
                               bool *oom);

#endif /* REIN_LOGPARSE_INT_H */
