/*
 * Private declarations shared by the files of src/verify/: the parsed protocol file, the
 * success-condition expressions, command splitting, git access, hashing and small text
 * helpers. Nothing here is part of the public API (include/rein/verify.h).
 */
#ifndef REIN_VERIFY_INT_H
#define REIN_VERIFY_INT_H

#include <rein/verify.h>
#include <rein/buf.h>
#include <rein/schema.h>

#include "core/internal.h"

/* ---- text helpers ---- */

/*
 * Writes a copy of len bytes of in without ANSI escape sequences, with "\r\n" and lone '\r'
 * turned into '\n', into a new buffer (NUL-terminated, *out_len bytes). NULL on ENOMEM.
 */
char *rein__verify_clean_text(const char *in, size_t len, size_t *out_len);
/* The last at most max bytes of text, starting at a line (and UTF-8 character) boundary. */
const char *rein__verify_tail(const char *text, size_t len, size_t max, size_t *tail_len);
/* Replaces each byte of s[0..n) that is not part of valid UTF-8 with '?'. */
void rein__verify_utf8_fix(char *s, size_t n);
/* A new JSON string of s (NULL: null), invalid UTF-8 replaced; NULL on ENOMEM. */
json_t *rein__verify_jstr(const char *s);
/* Case-insensitive ASCII prefix test. */
bool rein__verify_has_prefix_ci(const char *s, const char *prefix);

/* ---- success conditions ---- */

enum rein__tri {
    REIN__FALSE = 0,
    REIN__TRUE = 1,
    REIN__UNKNOWN = 2,
};

/* What a condition can look at: one step's run, or a protocol's summed steps. */
struct rein__expr_env {
    int exit_code;
    bool timed_out;
    int64_t duration_ms;
    const struct rein_verify_counts *counts;
    const char *output; /* cleaned output, NUL-terminated */
    size_t output_len;
};

struct rein__expr;
/*
 * Compiles text (borrowed). NULL on failure: *offset is the byte where it went wrong and why
 * says what (`unknown name "exit_cod"`); REIN_ENOMEM is reported as "out of memory".
 */
struct rein__expr *rein__verify_expr_compile(const char *text, size_t *offset, char *why,
                                             size_t why_len);
/* Evaluates; when the answer is UNKNOWN, note says which value was missing. */
enum rein__tri rein__verify_expr_eval(const struct rein__expr *e, const struct rein__expr_env *env,
                                      char *note, size_t note_len);
void rein__verify_expr_free(struct rein__expr *e);

/* ---- commands ---- */

/*
 * Splits cmd like a POSIX shell splits words (quotes and backslashes), without expanding
 * anything. Shell syntax outside quotes (| & ; < > $ ` ( ) * ?) is refused, naming the
 * character, because without a shell it would be passed to the program literally. New
 * NULL-terminated argv (free with rein__verify_argv_free) or NULL with why set.
 */
char **rein__verify_split_command(const char *cmd, char *why, size_t why_len);
void rein__verify_argv_free(char **argv);

/* ---- the parsed protocol file ---- */

enum rein__on_failure {
    REIN__ON_FAILURE_FAIL = 0,
    REIN__ON_FAILURE_SKIP = 1,
    REIN__ON_FAILURE_RETRY = 2,
};

/* Trigger conditions, a bit each; a protocol runs when any of its bits holds (0: always). */
enum rein__cond {
    REIN__COND_FILES_ADDED = 1u << 0,
    REIN__COND_FILES_CHANGED = 1u << 1,
    REIN__COND_FILES_DELETED = 1u << 2,
    REIN__COND_DEPENDENCIES = 1u << 3,
    REIN__COND_API = 1u << 4,
    REIN__COND_SECURITY = 1u << 5,
};

struct rein__step {
    char *name;    /* display name: the step's name, else its command */
    char *command; /* the command as written (a list is joined with spaces) */
    char **argv;   /* NULL-terminated */
    bool shell;
    int64_t timeout_ms;
    struct rein__expr *success; /* NULL: exit_code == 0 */
    char *success_text;
    enum rein__on_failure on_failure;
    int retries;
    enum rein_verify_format format;
    char *cwd;       /* NULL: the run's directory */
    char **env;      /* "KEY=VALUE" overrides, NULL-terminated (top-level env first), or NULL */
    char **reports;  /* JUnit XML files the step writes (glob patterns, relative to its cwd),
                       NULL-terminated, or NULL */
    char **coverage; /* coverage reports it writes (globs), NULL-terminated, or NULL */
};

/* Invariant: protocols are stored in run order (group, then default rank, then file order). */
struct rein__protocol {
    char *name;
    char *description;
    enum rein_verify_priority priority;
    int group;
    int layer; /* 1-6 */
    int rank;  /* default order: BUILD 1, LINT 2, TEST 3, FUNCTIONALITY 4, ARCHITECT 5, else 6 */
    unsigned when;
    struct rein__step *steps;
    size_t nsteps;
    struct rein__expr *success; /* protocol-level criteria over summed counts; may be NULL */
    char *success_text;
    double coverage_threshold;  /* percent the coverage must reach; NaN when not set */
    rein_schema *output_schema; /* what the last step's JSON output must be; or NULL */
    bool judged;                /* FUNCTIONALITY or ARCHITECT without steps: the judge runs */
    char **case_argv;           /* FUNCTIONALITY's `run`: the command a case runs, or NULL */
    char *case_command;
};

struct rein_verify_config {
    enum rein_verify_mode mode;
    bool fast_fail;
    bool parallel;
    struct rein__protocol *protocols;
    size_t nprotocols;
};

/* ---- git ---- */

struct rein__git_entry {
    char *path; /* relative to the repository's top level */
    char x, y;  /* porcelain v1 status letters; '?' '?' for untracked */
};

struct rein__git {
    bool is_repo;
    char *toplevel; /* absolute */
    char *prefix;   /* the directory's path below toplevel, "" or ending in '/' */
    struct rein__git_entry *entries;
    size_t n;
    bool has_head;
};

/*
 * Runs git -C dir with args (borrowed, NULL-terminated, without "git") and captures stdout
 * into out (appended; stderr is discarded). *exit_code is git's status, or -1 when git
 * cannot be started (then REIN_OK is still returned).
 */
rein_err rein__verify_git(const char *dir, const char *const *args, struct rein_buf *out,
                          int *exit_code, rein_error *err);
/*
 * Reads the state of the tree at dir: repository paths, and every changed path (against
 * base when given: tracked changes from `git diff --name-status base` plus untracked files).
 * Not a repository: REIN_OK with is_repo false. REIN_EINVAL for an unknown base.
 */
rein_err rein__verify_git_read(const char *dir, const char *base, struct rein__git *g,
                               rein_error *err);
void rein__verify_git_release(struct rein__git *g);
/* The entry for a repository path, or NULL. */
const struct rein__git_entry *rein__verify_git_find(const struct rein__git *g, const char *path);
/*
 * Turns a path from a claim (relative to dir, or absolute) into a repository path. New
 * string, or NULL when it is outside the repository or memory is exhausted.
 */
char *rein__verify_git_repo_path(const struct rein__git *g, const char *dir, const char *path);
/* Joins dir and path ("." when dir is NULL), normalising "." and ".." components. New. */
char *rein__verify_path_join(const char *dir, const char *path);

/* ---- the judge ---- */

/* rein_verify_judge_schema() as a new document, checked against its text; NULL (ENOMEM). */
json_t *rein__verify_judge_schema_json(rein_error *err);

/*
 * The first '{' … matching '}' of text (strings skipped), as [*start, *end); false when
 * there is none or the first one never closes. Models wrap their JSON in prose and fences.
 */
bool rein__verify_judge_find_object(const char *text, size_t len, size_t *start, size_t *end);

/*
 * One question to a model answered through one tool (the judge's "verdict", FUNCTIONALITY's
 * "cases"): the tool's arguments are the answer and go through the call pipeline, so they are
 * validated against schema like any tool call; an invalid one is fed back once (opts'
 * max_attempts). Everything is borrowed.
 */
struct rein__verify_ask {
    const char *system, *prompt;
    const char *tool, *description;
    const char *what; /* "verdict", "set of cases": for the reason when none came */
    json_t *schema;
    const struct rein_verify_judge_opts *opts; /* may be NULL */
};
/*
 * Asks; REIN_OK with *reply the conforming arguments (new reference) or NULL when none came,
 * and *reason (new) saying why not (or the empty string). Errors: REIN_ECANCELED, REIN_ENOMEM.
 */
rein_err rein__verify_ask_run(rein_provider *p, const struct rein__verify_ask *a, json_t **reply,
                              char **reason, rein_error *err);

/* The YAML step lines project.c found for protocol ("BUILD", "TYPECHECK", "LINT", "TEST"),
 * "" when none (borrowed from pj). */
const char *rein__verify_project_steps(const rein_verify_project *pj, const char *protocol);

/* ---- shared between run.c, claims and term.c ---- */

/* The decision tree of the seed over the report's protocol statuses and claims. */
enum rein_verify_verdict rein__verify_verdict(const rein_verify_report *r);

#endif /* REIN_VERIFY_INT_H */
