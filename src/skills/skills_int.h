/*
 * Internals of the skills module (src/skills/): the allowed-roots configuration shared by the
 * file skills, the reply reader shared by the process and HTTP runners, and the parsers the
 * built-in skills are made of (exposed here for the fuzz targets and tests).
 */
#ifndef REIN_SKILLS_INT_H
#define REIN_SKILLS_INT_H

#include <rein/skills.h>

#include "core/internal.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

/* ---- paths.c: the folders the file skills may read ---- */
struct rein__skills_roots {
    char **roots; /* real paths, no trailing slash (except "/") */
    size_t n;
    size_t max_file_bytes;
};
/* Resolves cfg's roots (realpath). New object in *out. */
rein_err rein__skills_roots_new(const struct rein_skills_config *cfg,
                                struct rein__skills_roots **out, rein_error *err);
void rein__skills_roots_free(void *roots);
/* True when path is a regular file with more than one name (a hard link): like a symbolic
 * link leading outside, the file skills refuse it. */
bool rein__skills_is_hard_link(const char *path);
/* True when real (a real path) is one of the roots or inside one. */
bool rein__skills_roots_contain(const struct rein__skills_roots *r, const char *real);
/*
 * Resolves a path a model gave (relative to the first root, or absolute) to a real path
 * inside the roots: *out is new (rein_free). REIN_EDENIED when it is outside, lexically or
 * through a symbolic link, or is a hard link; REIN_ENOTFOUND when it does not exist. what names the argument in
 * messages ("root_dir").
 */
rein_err rein__skills_roots_resolve(const struct rein__skills_roots *r, const char *path,
                                    const char *what, char **out, rein_error *err);

/* ---- envvars.c ---- */
/* True when entry ("NAME=VALUE" or "NAME") names a credential that skills do not inherit. */
bool rein__skills_env_is_secret(const char *entry);

/* ---- reply.c: reading what an external skill answered ---- */
/*
 * Reads one JSON document an external skill produced: an object with a boolean "ok" is a
 * normalized result (ok → its output; not ok → its error's code, message and details); any
 * other value is the output itself. Returns REIN_OK with reply->output set, or the error's
 * code (rein_call_code_to_err) with err and reply->details set. doc is borrowed.
 */
/*
 * For manifests: prefix (copied) followed by value with each ${VAR} replaced from rein's
 * environment (unset: empty), where a ${VAR} may read only a variable named in allow (a JSON array
 * of names, may be NULL: none) and never one of rein's own; otherwise REIN_EDENIED with err
 * naming the variable. *out is new on success.
 */
rein_err rein__skills_expand_env_allowed(const char *prefix, const char *value, const json_t *allow,
                                         char **out, rein_error *err);
/* REIN_ESCHEMA (err names it) when a runner's env_allow (array, may be NULL) lists one of
 * rein's own variables. */
rein_err rein__skills_env_allow_check(const json_t *allow, rein_error *err);
/* True for the name (len bytes) of one of rein's own variables (REIN_*). */
bool rein__skills_env_is_reins(const char *name, size_t len);
/* The variables every process skill gets from rein's environment (NULL-terminated), besides
 * the LC_* ones. */
extern const char *const rein__skills_base_env[];
/*
 * A process skill's environment: the base and the variables allow names (borrowed from
 * environ), then the nset "NAME=value" entries of set (borrowed; they replace inherited ones of
 * the same name), and PATH=/usr/local/bin:/usr/bin:/bin when no PATH is set. New array
 * (rein_free it; the strings stay borrowed), or NULL when memory is exhausted.
 */
const char **rein__skills_child_env(const json_t *allow, char *const *set, size_t nset);
rein_err rein__skills_read_reply(json_t *doc, struct rein_tool_reply *reply, rein_error *err);
/*
 * Reads one line a process skill wrote on stderr as an event: an MCP notification
 * {"jsonrpc": "2.0", "method": "notifications/progress", "params": {progress, total?,
 * message?}} or {"jsonrpc": "2.0", "method": "notifications/message", "params": {level,
 * logger?, data}}. Returns true and fills ev (its strings and data borrowed from *doc, a new
 * reference the caller releases) when the line is one; false for any other line.
 */
bool rein__skills_event_line(const char *line, size_t len, struct rein_call_event *ev,
                             json_t **doc);
/* A request a skill that may ask the client wrote on stderr (runner_process.c). */
struct rein__skills_request {
    const json_t *id;     /* a string or an integer */
    const char *method;   /* any method name; which ones are passed on is the runner's business */
    const json_t *params; /* an object, or NULL when the request had none */
};
/* The most requests one batch line may hold. */
#define REIN__SKILLS_BATCH_MAX 16
/*
 * Reads one stderr line as requests to the client: a JSON-RPC 2.0 request {"jsonrpc": "2.0",
 * "id", "method", "params"?}, or a batch (an array of 1 to REIN__SKILLS_BATCH_MAX of them).
 * Returns how many, with *doc the parsed line (a new reference the caller releases; read the
 * requests with rein__skills_request_at); 0, with *doc NULL, for any other line.
 */
size_t rein__skills_request_line(const char *line, size_t len, json_t **doc);
/* Request i of a line rein__skills_request_line accepted, borrowed from doc; false when there
 * is no such request. */
bool rein__skills_request_at(const json_t *doc, size_t i, struct rein__skills_request *req);
/* Copies up to max bytes of text into out as a one-line snippet (control bytes as spaces). */
void rein__skills_snippet(const char *text, size_t len, char *out, size_t max);

/*
 * A regular expression a model gave as an argument, compiled with match limits so a
 * pathological pattern cannot run away: PCRE2's match limit (steps per start position) and
 * depth limit below. Match with rein__skills_regex_find; free with rein__skills_regex_free.
 */
#define REIN__SKILLS_REGEX_MATCH_LIMIT 1000000
#define REIN__SKILLS_REGEX_DEPTH_LIMIT 10000
struct rein__skills_regex {
    pcre2_code *code;
    pcre2_match_data *md;
    pcre2_match_context *mctx;
    const char *what, *path; /* the argument's name and JSON Pointer (static) */
};
/*
 * Compiles pattern with options (PCRE2_UTF and PCRE2_MATCH_INVALID_UTF are added). A bad
 * pattern is REIN_EINVALID: "<what> is not a valid regular expression: …" with a detail at
 * path (the argument's JSON Pointer) in reply.
 */
rein_err rein__skills_regex_compile(struct rein__skills_regex *re, const char *pattern,
                                    uint32_t options, const char *what, const char *path,
                                    struct rein_tool_reply *reply, rein_error *err);
void rein__skills_regex_free(struct rein__skills_regex *re);
/*
 * Finds the first match of re in subject (len bytes): 1 (the match is in re->md), 0 (none), or
 * an error with err set: REIN_EINVALID when the expression hits a PCRE2 limit (a limit is an
 * error, never "no match"; reply->details, when reply is given and has none, names the
 * argument), REIN_ETIMEDOUT or REIN_ECANCELED from inv (may be NULL), which is checked before
 * every 256 start positions, so a call never outruns its deadline by more than that many
 * bounded attempts.
 */
int rein__skills_regex_find(struct rein__skills_regex *re, const char *subject, size_t len,
                            const struct rein_invocation *inv, struct rein_tool_reply *reply,
                            rein_error *err);

/* ---- calc.c: the calculator's expression parser ---- */
enum rein__skills_calc_fail {
    REIN__SKILLS_CALC_SYNTAX = 1, /* the expression is malformed: the model should fix it */
    REIN__SKILLS_CALC_MATH, /* well-formed but undefined: division by zero, sqrt(-1), overflow */
};
struct rein__skills_calc_error {
    enum rein__skills_calc_fail kind;
    size_t position; /* 1-based byte position of the problem */
    char msg[200];
};
rein_err rein__skills_calc_eval(const char *expr, size_t len, double *out,
                                struct rein__skills_calc_error *e);

/* ---- logparse.c: log line parsers ---- */
enum rein__skills_log_format {
    REIN__SKILLS_LOG_AUTO = 0,
    REIN__SKILLS_LOG_JSON,
    REIN__SKILLS_LOG_LOGFMT,
    REIN__SKILLS_LOG_SYSLOG,
    REIN__SKILLS_LOG_APACHE,
    REIN__SKILLS_LOG_PLAIN,
    REIN__SKILLS_LOG_NGINX,
    REIN__SKILLS_LOG_JAVA,
    REIN__SKILLS_LOG_PYTHON,
    REIN__SKILLS_LOG_GO,
    REIN__SKILLS_LOG_KLOG,
    REIN__SKILLS_LOG_DOCKER,
    REIN__SKILLS_LOG_CRI,
    REIN__SKILLS_LOG_COUNT /* not a format */
};
const char *rein__skills_log_format_name(enum rein__skills_log_format f);
bool rein__skills_log_format_parse(const char *text, enum rein__skills_log_format *out);
/*
 * Parses one line (no newline) in format f (AUTO tries each and prefers a record with a
 * level). Returns a new record
 *   {format, time?, level?, message?, fields: {…}}
 * or NULL when the line is not in that format (or memory is exhausted: *oom is set).
 * level is normalised to trace|debug|info|warn|error|fatal. The docker and cri wrappers read
 * the wrapped line again: their fields hold its fields and inner_format.
 */
json_t *rein__skills_log_parse_line(enum rein__skills_log_format f, const char *line, size_t len,
                                    bool *oom);
/* Severity rank of a normalised level (trace 0 … fatal 5), -1 when unknown. */
int rein__skills_log_level_rank(const char *level);
/* The normalised level for a level word ("WARNING" → "warn"), or NULL. */
const char *rein__skills_log_level_normalize(const char *word, size_t len);

/* ---- runner_process.c, runner_http.c: the runner kinds of external skills ---- */
const struct rein_runner_kind *rein__skills_process_kind(void);
const struct rein_runner_kind *rein__skills_http_kind(void);

/* ---- the built-in skills (each registers itself) ---- */
rein_err rein__skills_echo_register(rein_registry *reg, rein_error *err);
rein_err rein__skills_calculator_register(rein_registry *reg, rein_error *err);
rein_err rein__skills_file_search_register(rein_registry *reg, const struct rein_skills_config *cfg,
                                           rein_error *err);
rein_err rein__skills_log_transform_register(rein_registry *reg,
                                             const struct rein_skills_config *cfg, rein_error *err);
/* Parses a manifest given as JSON text (a constant in rein) and registers fn with it. */
rein_err rein__skills_register(rein_registry *reg, const char *manifest_text, rein_tool_fn fn,
                               void *userdata, void (*free_userdata)(void *userdata),
                               rein_error *err);
/* A JSON number for v: an integer when v is integral and exactly representable. */
json_t *rein__skills_json_number(double v);

#endif /* REIN_SKILLS_INT_H */
