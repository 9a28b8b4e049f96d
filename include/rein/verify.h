/*
 * rein/verify.h: closed-loop verification. Did the agent really finish, or does it only look
 * finished?
 *
 * This header has six parts, used together by `rein verify`, by `rein loop`
 * (include/rein/loop.h) and by the LLM judge:
 *
 *  1. Protocols. A protocol file (`rein-verify.yaml`, `.yml` or `.json`) declares BUILD, LINT,
 *     TEST, FUNCTIONALITY, ARCHITECT and custom protocols. Each protocol has a priority, an
 *     optional parallel group, an optional layer and trigger conditions, and a list of steps;
 *     a step runs one command (no shell unless `shell: true`), with a timeout, a success
 *     condition and an on_failure policy (retry | skip | fail). The file format:
 *
 *       mode: standard              # minimal | standard | thorough | full
 *       fast_fail: true             # a failed P0/P1 protocol stops the later groups
 *       parallel: true              # protocols that share a group run at the same time
 *       timeout: 600                # default step timeout: seconds, or "30s", "5m", "1h"
 *       env: {CI: "1"}              # added to every step's environment
 *       protocols:
 *         BUILD:
 *           priority: P0            # P0 blocking | P1 required | P2 desired
 *           steps:
 *             - command: make all   # a string split like a shell would, without a shell,
 *               timeout: 300        # or a list ["make", "all"]
 *         TEST:
 *           priority: P1
 *           group: 2                # protocols in one group run in parallel
 *           steps:
 *             - name: unit tests
 *               command: make test
 *               success: exit_code == 0 and failed == 0
 *               on_failure: retry   # retry | skip | fail (default fail)
 *               retries: 2          # extra attempts for retry (default 2)
 *               format: auto        # output parser: auto | none | ctest | cmocka | pytest
 *                                   # | jest | vitest | tap | junit | gcc | eslint
 *               cwd: subdir         # relative to the working directory
 *               env: {VERBOSE: 1}
 *               shell: false        # true: run with /bin/sh -c
 *               reports: [out/junit-*.xml]  # JUnit XML the step writes (globs):
 *                                   # their counts replace the printed ones
 *               coverage: coverage.json  # coverage reports it writes (globs; the formats of
 *                                   # rein_verify_coverage_read); the lowest one counts
 *           coverage_threshold: 80  # TEST passes when its steps pass and coverage >= 80
 *         SECURITY:                 # a custom protocol
 *           description: dependency audit
 *           layer: 1                # which layer it belongs to (1-6); see modes below
 *           when: [dependencies_changed]   # or trigger_conditions: [...]
 *           success: errors == 0    # or success_criteria: protocol-level, over summed counts
 *           steps: [{command: npm audit --omit=dev}]
 *
 *     Unknown keys are errors (a typo must not silently disable a check). A malformed file is
 *     reported with its line and column.
 *
 *     Success conditions are small expressions: numbers, "strings", the names exit_code,
 *     timed_out, duration_ms, passed, failed, skipped, total, errors, warnings, error_count,
 *     warning_count, all_tests_pass, coverage (percent) and output; the operators == != <
 *     <= > >=, `output contains "text"`, `output matches "regex"`, and/&&, or/||, not/!,
 *     parentheses. A name the output did not report (failed, when no parser recognised the
 *     output; coverage, when no report or printed total gave one) makes the condition
 *     undecided, which counts as failure with a note saying why. Output is read as it
 *     streams, so every test result is counted however long it is; `output` holds its last
 *     8 MiB. Report files older than the step's start are ignored (with a note), as CI
 *     systems ignore stale test reports.
 *
 *  2. Order. Protocols run in groups, lowest group first; the protocols of one group run in
 *     parallel (on the pool given, or a temporary one). Without `group:` the seed's groups
 *     apply: BUILD 1; LINT and TEST 2; FUNCTIONALITY and ARCHITECT 3; custom protocols 4.
 *     Within a group, and with `parallel: false` everywhere, the order is BUILD, LINT, TEST,
 *     FUNCTIONALITY, ARCHITECT, then custom protocols in file order; `parallel: false` runs
 *     them one at a time in that order (group by group). With fast_fail (the
 *     default), once a group has a failed P0 or P1 protocol the later groups are not run
 *     (status not_run). ARCHITECT runs only when files were added, dependencies changed or
 *     public signatures changed, as read from `git status` and `git diff` (outside a git
 *     repository the changes are unknown and ARCHITECT runs). Any protocol may declare `when`
 *     conditions: always, files_added (= new_files_created), files_changed, files_deleted,
 *     dependencies_changed, api_changed (= api_signature_changed), security_sensitive.
 *
 *     Layer modes, from the seed's six layers (1 static, 2 unit tests, 3 integration,
 *     4 end-to-end, 5 LLM judge, 6 human review):
 *       minimal   layers 1       BUILD, LINT
 *       standard  layers 1 2 5   + TEST, FUNCTIONALITY, ARCHITECT      (the default)
 *       thorough  layers 1 2 3 5 6  + protocols with `layer: 3`; the report says whether a
 *                                 person should review (layer 6)
 *       full      layers 1-6     + protocols with `layer: 4` (end-to-end)
 *     BUILD and LINT are layer 1 (the static layer: compiling is the type check of compiled
 *     languages); TEST and FUNCTIONALITY are layer 2 (the seed's FUNCTIONALITY runs the code
 *     on cases, as unit tests do); ARCHITECT is layer 5 (its last step is the judge's design
 *     review); custom protocols default to layer 2. Layer 6 is not a protocol: in thorough
 *     and full mode the report's "review" says a person should look when architecture
 *     changed or security-sensitive files changed.
 *
 *  3. Criteria and the verdict, after the seed's decision tree: SUCCESS when everything that
 *     ran passed; FAILED when a P0 or P1 protocol failed or a claim was refuted;
 *     SUCCESS_WITH_WARNINGS when only P2 protocols failed, a claim could not be verified,
 *     nothing was verified at all, or the overall confidence is below
 *     REIN_VERIFY_CONFIDENCE_HIGH. (In a loop, a P1 failure means "iterate again"; that is
 *     the termination decision's job, part 5.)
 *
 *  4. Claims (chain-of-verification, include/rein/claims.h). The claims of an agent's final
 *     text (a tool ran, a file written or deleted, a function added, tests, build, lint or
 *     type checks passing; English and Chinese) are checked against the ledger when one is
 *     given, the working tree and git, the source, and by running the matching protocol.
 *     Each is confirmed, refuted or unverifiable; a refuted claim fails the verdict.
 *
 *  5. Termination (for `rein loop`): given the history of iterations (failing checks with
 *     their error signatures, a working-tree hash, a progress metric, a confidence), decide
 *     to continue, to stop with a named reason, or to extend the iteration limit by half,
 *     once. Stall, oscillation and repeated-state detection live here.
 *
 *  6. Confidence and the judge. Every result carries a confidence in [0, 1]; a result's
 *     confidence is the minimum of its own and its inputs'; below 0.7 it is UNVERIFIED and
 *     below 0.4 it is withheld (not passed downstream). The LLM judge's reply has a JSON
 *     Schema (rein_verify_judge_schema()) and is checked against it like a tool call;
 *     rein_verify_judge_run() asks a model for it through the call pipeline.
 *
 * Threading: a rein_verify_config is immutable once loaded and may be used by many runs on
 * many threads at once. A report, a claims list and a termination tracker belong to one
 * thread at a time. The event callback of a run is called from worker threads, but never
 * twice at the same time.
 */
#ifndef REIN_VERIFY_H
#define REIN_VERIFY_H

#include <rein/cancel.h>
#include <rein/claims.h>
#include <rein/json.h>
#include <rein/pool.h>
#include <rein/provider.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- names ---------------------------------------------------------------------------- */

/* Enums and their names come from one list each (X-macros). */

/* P0 blocking: must pass; P1 required: should pass; P2 desired: a failure is a warning. */
#define REIN_VERIFY_PRIORITY_MAP(X)                                                                \
    X(P0, "P0")                                                                                    \
    X(P1, "P1")                                                                                    \
    X(P2, "P2")
#define REIN__VERIFY_PRIORITY_ENUM(id, name) REIN_VERIFY_##id,
enum rein_verify_priority { REIN_VERIFY_PRIORITY_MAP(REIN__VERIFY_PRIORITY_ENUM) };
#undef REIN__VERIFY_PRIORITY_ENUM

/* DEFAULT: the file's mode, standard when it has none. */
#define REIN_VERIFY_MODE_MAP(X)                                                                    \
    X(DEFAULT, "default")                                                                          \
    X(MINIMAL, "minimal")                                                                          \
    X(STANDARD, "standard")                                                                        \
    X(THOROUGH, "thorough")                                                                        \
    X(FULL, "full")
#define REIN__VERIFY_MODE_ENUM(id, name) REIN_VERIFY_MODE_##id,
enum rein_verify_mode { REIN_VERIFY_MODE_MAP(REIN__VERIFY_MODE_ENUM) };
#undef REIN__VERIFY_MODE_ENUM

/*
 * A check's status:
 *   passed, failed
 *   skipped       not selected: mode, `only`, or its conditions did not hold
 *   not_run       selected but not run: fast-fail or cancellation
 *   unverifiable  ran, but could not be decided: a judged protocol without a model, or the
 *                 judge gave no verdict or asked for a person (NEEDS_REVIEW)
 */
#define REIN_VERIFY_STATUS_MAP(X)                                                                  \
    X(PASSED, "passed")                                                                            \
    X(FAILED, "failed")                                                                            \
    X(SKIPPED, "skipped")                                                                          \
    X(NOT_RUN, "not_run")                                                                          \
    X(UNVERIFIABLE, "unverifiable")
#define REIN__VERIFY_STATUS_ENUM(id, name) REIN_VERIFY_STATUS_##id,
enum rein_verify_status { REIN_VERIFY_STATUS_MAP(REIN__VERIFY_STATUS_ENUM) };
#undef REIN__VERIFY_STATUS_ENUM

#define REIN_VERIFY_VERDICT_MAP(X)                                                                 \
    X(SUCCESS, "SUCCESS")                                                                          \
    X(SUCCESS_WITH_WARNINGS, "SUCCESS_WITH_WARNINGS")                                              \
    X(FAILED, "FAILED")
#define REIN__VERIFY_VERDICT_ENUM(id, name) REIN_VERIFY_##id,
enum rein_verify_verdict { REIN_VERIFY_VERDICT_MAP(REIN__VERIFY_VERDICT_ENUM) };
#undef REIN__VERIFY_VERDICT_ENUM

/* Static names: "P0"; "standard"; "passed", "not_run"; "SUCCESS_WITH_WARNINGS". */
REIN_EXTERN const char *rein_verify_priority_name(enum rein_verify_priority p);
REIN_EXTERN const char *rein_verify_mode_name(enum rein_verify_mode m);
REIN_EXTERN const char *rein_verify_status_name(enum rein_verify_status s);
REIN_EXTERN const char *rein_verify_verdict_name(enum rein_verify_verdict v);
/* Parses "minimal|standard|thorough|full"; false (and *out unchanged) on anything else. */
REIN_EXTERN bool rein_verify_mode_parse(const char *text, enum rein_verify_mode *out);

/* ---- output parsers ------------------------------------------------------------------- */

/*
 * The output formats a check's output is read in:
 *   auto    every parser; test counts from the first that matches
 *   gcc     gcc and clang diagnostics, ld's undefined references ("clang" parses too)
 *   eslint  `eslint -f json`, and the stylish summary line
 *   junit   JUnit XML (<testsuites>/<testsuite>/<testcase>), as pytest --junitxml, ctest
 *           --output-junit, Maven Surefire, Gradle, jest-junit, `vitest --reporter=junit` and
 *           `node --test --test-reporter=junit` write it; "junit-xml" parses too
 */
#define REIN_VERIFY_FORMAT_MAP(X)                                                                  \
    X(AUTO, "auto")                                                                                \
    X(NONE, "none")                                                                                \
    X(CTEST, "ctest")                                                                              \
    X(CMOCKA, "cmocka")                                                                            \
    X(PYTEST, "pytest")                                                                            \
    X(JEST, "jest")                                                                                \
    X(VITEST, "vitest")                                                                            \
    X(TAP, "tap")                                                                                  \
    X(GCC, "gcc")                                                                                  \
    X(ESLINT, "eslint")                                                                            \
    X(JUNIT, "junit")
#define REIN__VERIFY_FORMAT_ENUM(id, name) REIN_VERIFY_FORMAT_##id,
enum rein_verify_format { REIN_VERIFY_FORMAT_MAP(REIN__VERIFY_FORMAT_ENUM) };
#undef REIN__VERIFY_FORMAT_ENUM
REIN_EXTERN const char *rein_verify_format_name(enum rein_verify_format f);
REIN_EXTERN bool rein_verify_format_parse(const char *text, enum rein_verify_format *out);

/*
 * What a command's output says, when a parser recognised it. Test counts and diagnostic
 * counts are separate because one output often has both (`make test` compiles, then runs
 * the tests). xfail/todo results count as skipped; pytest's errors count as failed; a
 * test file that fails to load (Jest, Vitest, node --test) counts as one failed test, and
 * tests a filter left out (pytest's deselected, ctest -R) are not counted.
 */
struct rein_verify_counts {
    bool has_tests;
    int64_t passed, failed, skipped, total;
    bool has_diagnostics;
    int64_t errors, warnings;
    char format[48]; /* the parsers that matched, joined with '+' ("gcc+ctest"); "" if none */
    bool has_coverage;
    double coverage; /* percent of lines (statements for Go) covered, 0-100 */
};

/*
 * Parses len bytes of a command's output (borrowed; ANSI colours and carriage returns are
 * tolerated) as fmt. *counts is always filled. When diagnostics is not NULL it receives a
 * new JSON array (up to 50 entries) of what failed: compiler and lint diagnostics
 * {"severity": "error"|"warning", "file", "line", "column", "message", "rule"} and failing
 * tests {"severity": "failure", "test": name, "message"?}; absent members are unknown.
 * Every result is counted however many there are; only the description stops at 50.
 * Coverage totals that tools print (gcovr, `lcov --summary`, `coverage report`, `go test
 * -cover`, Jest/Istanbul's text summary) fill has_coverage and coverage (the last one
 * printed wins). Errors: REIN_ENOMEM only.
 */
REIN_EXTERN rein_err rein_verify_output_parse(const char *text, size_t len,
                                              enum rein_verify_format fmt,
                                              struct rein_verify_counts *counts,
                                              json_t **diagnostics, rein_error *err) REIN_WUR;

/*
 * The same as a stream, in memory that does not grow with the output: feed the bytes as
 * they come (in pieces of any size; a line or an escape sequence may be split anywhere),
 * then finish. Lines longer than 4 KiB are read by their first 4 KiB (ESLint's JSON report
 * and JUnit XML, read as byte streams, are not cut). rein_verify_output_new returns a new
 * reader (want_diagnostics: keep the first 50 failures) or NULL when memory is exhausted;
 * finish fills *counts and *diagnostics as rein_verify_output_parse does and may be called
 * once. A reader belongs to one thread at a time.
 */
typedef struct rein_verify_output rein_verify_output;
REIN_EXTERN rein_verify_output *rein_verify_output_new(enum rein_verify_format fmt,
                                                       bool want_diagnostics);
REIN_EXTERN void rein_verify_output_feed(rein_verify_output *o, const char *data, size_t len);
REIN_EXTERN rein_err rein_verify_output_finish(rein_verify_output *o,
                                               struct rein_verify_counts *counts,
                                               json_t **diagnostics, rein_error *err) REIN_WUR;
REIN_EXTERN void rein_verify_output_free(rein_verify_output *o);

/* ---- coverage reports ------------------------------------------------------------------ */

/* A coverage total read from a report. */
struct rein_verify_coverage {
    double percent;         /* lines covered, 0-100 (statements for Go) */
    int64_t covered, total; /* the counts behind it when the format gives them, else -1 */
    char format[24];        /* "coverage.py", "istanbul", "gcovr", "lcov", "go", "jacoco",
                               "cobertura", "text" (a printed total) */
};

/*
 * Reads a coverage report, its format found from the content: coverage.py's `coverage
 * json`, Istanbul's coverage-summary.json (Jest, Vitest, nyc), gcovr's --json-summary, an
 * lcov tracefile, a Go -coverprofile (blocks listed twice count once), JaCoCo XML (the
 * report's LINE counter), Cobertura XML (line-rate; gcovr --xml, coverage xml), or text with
 * a printed total (gcovr, `coverage report`, `lcov --summary`, `go tool cover -func`).
 * _parse reads len bytes of text (borrowed); _read the file at path (borrowed), streamed:
 * line and XML formats in bounded memory, JSON up to 64 MiB. Errors: REIN_EPARSE (err
 * says what is wrong), REIN_ENOTFOUND / REIN_EIO for _read, REIN_ENOMEM.
 */
REIN_EXTERN rein_err rein_verify_coverage_parse(const char *text, size_t len,
                                                struct rein_verify_coverage *out,
                                                rein_error *err) REIN_WUR;
REIN_EXTERN rein_err rein_verify_coverage_read(const char *path, struct rein_verify_coverage *out,
                                               rein_error *err) REIN_WUR;

/* ---- protocol files ------------------------------------------------------------------- */

typedef struct rein_verify_config rein_verify_config;

/*
 * Reads a protocol file. JSON when the name ends in ".json" or the text starts with '{',
 * YAML otherwise (one document; anchors and aliases allowed). Returns a new config, or NULL
 * with err set: REIN_ENOTFOUND / REIN_EIO when the file cannot be read, REIN_ETOOBIG over
 * 1 MiB, REIN_EPARSE for
 * malformed text and REIN_EINVAL for a well-formed file that breaks the rules above; both
 * carry err->line and err->column (1-based) and a message "<file>:<line>:<col>: <where>:
 * <what>". path is borrowed.
 */
REIN_EXTERN rein_verify_config *rein_verify_config_load(const char *path, rein_error *err);
/* The same from memory; name (borrowed, may be NULL) is used in messages and to pick JSON. */
REIN_EXTERN rein_verify_config *rein_verify_config_parse(const char *text, size_t len,
                                                         const char *name, rein_error *err);
/*
 * Loads the first of rein-verify.yaml, rein-verify.yml, rein-verify.json found in dir
 * (borrowed; NULL: the current directory). REIN_ENOTFOUND when there is none.
 */
REIN_EXTERN rein_verify_config *rein_verify_config_find(const char *dir, rein_error *err);
/* A config with no protocols (for checking claims only). NULL when memory is exhausted. */
REIN_EXTERN rein_verify_config *rein_verify_config_new_empty(void);
REIN_EXTERN void rein_verify_config_free(rein_verify_config *cfg);
/* The file's mode (STANDARD when it names none). */
REIN_EXTERN enum rein_verify_mode rein_verify_config_mode(const rein_verify_config *cfg);
REIN_EXTERN size_t rein_verify_config_protocol_count(const rein_verify_config *cfg);
/* Name of protocol i in run order (borrowed from cfg); NULL when i is out of range. */
REIN_EXTERN const char *rein_verify_config_protocol_name(const rein_verify_config *cfg, size_t i);
REIN_EXTERN bool rein_verify_config_has_protocol(const rein_verify_config *cfg, const char *name);

/* ---- projects and criteria ------------------------------------------------------------ */

/* What rein_verify_project_detect found, a bit each. */
enum rein_verify_project_kind {
    REIN_VERIFY_PROJECT_CMAKE = 1u << 0,
    REIN_VERIFY_PROJECT_MAKE = 1u << 1,
    REIN_VERIFY_PROJECT_NODE = 1u << 2, /* npm, yarn or pnpm */
    REIN_VERIFY_PROJECT_TYPESCRIPT = 1u << 3,
    REIN_VERIFY_PROJECT_PYTHON = 1u << 4,
    REIN_VERIFY_PROJECT_CARGO = 1u << 5,
    REIN_VERIFY_PROJECT_GO = 1u << 6,
    REIN_VERIFY_PROJECT_MAVEN = 1u << 7,
    REIN_VERIFY_PROJECT_GRADLE = 1u << 8,
    REIN_VERIFY_PROJECT_HAS_TESTS = 1u << 9,   /* a test command was found */
    REIN_VERIFY_PROJECT_HAS_LINTER = 1u << 10, /* a linter was found */
};

typedef struct rein_verify_project rein_verify_project;

/*
 * Looks at the files of dir (borrowed; NULL: the current directory), without running
 * anything, for CMake/Make, npm/yarn/pnpm, TypeScript, ESLint, pytest/tox, ruff, cargo, go,
 * Maven/Gradle and clang-tidy, and the build, type-check, lint and test commands they imply.
 * Returns a new result (possibly of nothing), or NULL with err set: REIN_ENOTFOUND when dir
 * is not a folder, REIN_ENOMEM.
 */
REIN_EXTERN rein_verify_project *rein_verify_project_detect(const char *dir, rein_error *err);
REIN_EXTERN void rein_verify_project_free(rein_verify_project *p);
/* enum rein_verify_project_kind bits. */
REIN_EXTERN unsigned rein_verify_project_kinds(const rein_verify_project *p);
/* A new {"found": [{"kind", "evidence"}], "has_tests", "has_linter", "typescript"}; NULL on
 * ENOMEM. */
REIN_EXTERN json_t *rein_verify_project_json(const rein_verify_project *p);
/*
 * The protocol file for the project (what `rein verify --init` writes): BUILD (P0),
 * TYPECHECK, LINT and TEST (P1) with the commands found, and a comment naming what was
 * found. New text, or NULL when nothing was found (or memory is exhausted).
 */
REIN_EXTERN char *rein_verify_project_yaml(const rein_verify_project *p);

typedef struct rein_verify_criteria rein_verify_criteria;

/*
 * Success criteria derived from a request (002, 2.2): goal's action verbs (English,
 * simplified and traditional Chinese: implement/add 實作/新增/实现, fix 修復/修复, refactor
 * 重構/重构) mapped by the seed's table, its constraints ("don't change the API", 保持向後相容),
 * and the implicit ones (no syntax errors always; no type errors in TypeScript; tests pass
 * when the project has tests; lint passes when it has a linter; no TODO added, desired), each
 * with a priority (P0 compiles, P1 tests/lint/types and the verbs', P2 desired) and the
 * protocol that checks it, in the project at dir (borrowed; NULL: current directory). goal is
 * borrowed. New result, or NULL with err set (REIN_EINVAL without a goal, REIN_ENOTFOUND,
 * REIN_ENOMEM).
 */
REIN_EXTERN rein_verify_criteria *rein_verify_criteria_derive(const char *goal, const char *dir,
                                                              rein_error *err);
REIN_EXTERN void rein_verify_criteria_free(rein_verify_criteria *c);
/* The protocols that check them (borrowed, valid while c is). */
REIN_EXTERN const rein_verify_config *rein_verify_criteria_config(const rein_verify_criteria *c);
/*
 * {"goal", "verbs": [{"class": "implement"|"fix"|"refactor", "word"}], "constraints":
 * [text], "project": {…rein_verify_project_json…}, "criteria": [{"id", "priority",
 * "protocol", "source", "checked", "why"?}]} (borrowed). A criterion whose protocol has
 * nothing to run in the project is kept with checked false and why.
 */
REIN_EXTERN const json_t *rein_verify_criteria_json(const rein_verify_criteria *c);
/* One line per criterion, for a person (borrowed). */
REIN_EXTERN const char *rein_verify_criteria_text(const rein_verify_criteria *c);

/* ---- working-tree changes ------------------------------------------------------------- */

/*
 * What changed in a git working tree: against HEAD (staged, unstaged and untracked files),
 * or against base when one is given. `known` is false outside a git repository (or without
 * git), and then every other member is false.
 */
struct rein_verify_changes {
    bool known;
    bool files_added, files_modified, files_deleted;
    bool dependencies_changed; /* a package manifest or lock file, or a dependency line in a
                                  build file (find_package, pkg_check_modules, LDLIBS, …) */
    bool api_changed;          /* a declaration line in a header, or an exported symbol line
                                  (export …, pub fn, an exported Go func, a public def) */
    bool security_sensitive;   /* a changed path that names auth, secrets, crypto, keys, … */
    size_t changed_count;
};

/*
 * Reads the changes of the tree at dir (borrowed; NULL: current directory) against base
 * (borrowed revision; NULL: HEAD). Not being in a git repository is not an error (known is
 * false). Errors: REIN_ENOMEM, REIN_EINVAL for a base git does not know.
 */
REIN_EXTERN rein_err rein_verify_changes_read(const char *dir, const char *base,
                                              struct rein_verify_changes *out,
                                              rein_error *err) REIN_WUR;

/* ---- confidence ----------------------------------------------------------------------- */

#define REIN_VERIFY_CONFIDENCE_HIGH    0.7 /* at or above: used as is */
#define REIN_VERIFY_CONFIDENCE_LOW     0.4 /* below: withheld from downstream */
#define REIN_VERIFY_CONFIDENCE_GIVE_UP 0.3 /* below: the loop cannot complete */

enum rein_verify_confidence_level {
    REIN_VERIFY_CONFIDENCE_LEVEL_HIGH = 0,   /* "verified" */
    REIN_VERIFY_CONFIDENCE_LEVEL_MEDIUM = 1, /* "UNVERIFIED": used, with a warning */
    REIN_VERIFY_CONFIDENCE_LEVEL_LOW = 2,    /* "withheld": not passed downstream */
};
/* Downstream confidence: min(own, inputs[0..n)); values are clamped to [0, 1]; NaN is 0. */
REIN_EXTERN double rein_verify_confidence_propagate(double own, const double *inputs, size_t n);
REIN_EXTERN enum rein_verify_confidence_level rein_verify_confidence_level(double c);
/* "verified", "UNVERIFIED" or "withheld". */
REIN_EXTERN const char *rein_verify_confidence_label(double c);

/* Claims (extraction and evidence) are the claims module's: include/rein/claims.h. A run
 * checks the claims of opts.claims_text with it; rein_verify_report_claims() returns them. */

/* ---- running ------------------------------------------------------------------------- */

/* Everything about one protocol's result. Strings are borrowed from the report. */
struct rein_verify_protocol_info {
    const char *name;
    enum rein_verify_priority priority;
    enum rein_verify_status status;
    int group;
    int64_t started_ms;  /* offsets from the start of the run on the monotonic clock; */
    int64_t ended_ms;    /* -1 when it did not run */
    int64_t duration_ms; /* 0 when it did not run */
    int attempts;        /* runs of the deciding step (> 1 after retries) */
    bool flaky;          /* passed only after a retry */
    bool for_claim;      /* not selected, run only to check a claim */
    struct rein_verify_counts counts; /* summed over the steps */
    const char *output_tail;          /* the end of the last step's output, ANSI removed */
    const char *reason;               /* one line: why it failed, was skipped or not run */
    const char *signature;            /* 16 hex digits naming the failure; "" unless failed */
    double confidence;
};

enum rein_verify_event {
    REIN_VERIFY_EVENT_START = 0, /* info has name, priority and group only */
    REIN_VERIFY_EVENT_END = 1,   /* info is complete */
};
typedef void (*rein_verify_event_fn)(enum rein_verify_event ev,
                                     const struct rein_verify_protocol_info *info, void *userdata);

struct rein_verify_opts {
    const char *cwd;            /* borrowed; where steps run; NULL: the current directory */
    enum rein_verify_mode mode; /* DEFAULT: the file's */
    const char *const *only;    /* borrowed NULL-terminated names to run regardless of mode
                                     and conditions (the loop's --until); NULL: all selected */
    const char *claims_text;    /* borrowed agent text whose claims are checked; may be NULL */
    size_t claims_len;
    const char *base;    /* borrowed revision for changes and claims; NULL: HEAD */
    rein_pool *pool;     /* borrowed; NULL: a temporary pool when a group has more
                                     than one protocol */
    rein_cancel *cancel; /* borrowed; may be NULL. Stops running steps (not_run) */
    size_t tail_bytes;   /* output tail kept per protocol; 0: 4096 */
    rein_verify_event_fn on_event;
    void *userdata;
    /* FUNCTIONALITY and ARCHITECT without steps ask this model (borrowed; NULL: they are
     * UNVERIFIABLE, which makes the verdict SUCCESS_WITH_WARNINGS, not a failure). */
    rein_provider *judge;
    const struct rein_verify_judge_opts *judge_opts; /* borrowed; may be NULL */
    const char *goal;     /* borrowed: what was asked, the behaviour FUNCTIONALITY is judged
                         against; NULL: the protocol's description */
    const json_t *ledger; /* borrowed ledger entries the claims' tool calls are
                                      checked against (the agent's); NULL: tool claims are
                                      unverifiable */
    const rein_registry *registry;  /* borrowed; names the tools claims may mention; NULL */
    const rein_claims *claims_more; /* borrowed claims listed by other means (the claims
                                       judge), checked with those extracted; NULL */
};

typedef struct rein_verify_report rein_verify_report;

/*
 * Runs the protocols of cfg (borrowed) as opts (borrowed; may be NULL) say, then checks the
 * claims of opts->claims_text, running a protocol that did not run when a claim needs it.
 * A failing step, a timeout or a missing program is a result, not an error. *out receives a
 * new report. Errors: REIN_ENOMEM, REIN_EINVAL (bad options: an `only` name the file does
 * not declare, a base revision git does not know), REIN_EIO.
 */
REIN_EXTERN rein_err rein_verify_run(const rein_verify_config *cfg,
                                     const struct rein_verify_opts *opts, rein_verify_report **out,
                                     rein_error *err) REIN_WUR;
REIN_EXTERN void rein_verify_report_free(rein_verify_report *report);
REIN_EXTERN enum rein_verify_verdict rein_verify_report_verdict(const rein_verify_report *r);
REIN_EXTERN enum rein_verify_mode rein_verify_report_mode(const rein_verify_report *r);
/* The minimum confidence of everything that ran and every claim checked (1 when none). */
REIN_EXTERN double rein_verify_report_confidence(const rein_verify_report *r);
/*
 * A progress metric in [0, 1] for the loop: the mean over selected protocols of 1 (passed),
 * the test pass rate or 1/(1 + errors) (failed with counts), or 0.
 */
REIN_EXTERN double rein_verify_report_progress(const rein_verify_report *r);
REIN_EXTERN size_t rein_verify_report_protocol_count(const rein_verify_report *r);
/* Fills *info for protocol i (run order). false when i is out of range. */
REIN_EXTERN bool rein_verify_report_protocol(const rein_verify_report *r, size_t i,
                                             struct rein_verify_protocol_info *info);
/* The checked claims (borrowed), or NULL when no claims text was given. */
REIN_EXTERN const rein_claims *rein_verify_report_claims(const rein_verify_report *r);
/*
 * The report as a new JSON object: {verdict, mode, confidence, progress, protocols: [{name,
 * priority, status, group, duration_ms, started_ms, ended_ms, attempts, flaky, counts:
 * {passed, failed, skipped, total, errors, warnings, format, coverage} (null when unknown),
 * diagnostics, steps, output_tail, reason, signature, confidence, unverified, judge? (a
 * judged protocol: the judge's result, or FUNCTIONALITY's behaviour and cases)}], claims,
 * changes, review (thorough and full modes, and whenever the judge asked for a person),
 * notes}. NULL when memory is exhausted.
 */
REIN_EXTERN json_t *rein_verify_report_json(const rein_verify_report *r);

/* ---- termination --------------------------------------------------------------------- */

#define REIN_VERIFY_HASH_LEN 64 /* hex digits of a tree or state hash (SHA-256) */

/* A failing check of one iteration. */
struct rein_verify_failing {
    const char *check;     /* "TEST" (borrowed; copied by rein_verify_term_add) */
    const char *signature; /* what failed, e.g. a protocol's signature (borrowed; copied) */
    enum rein_verify_priority priority;
};

/* What one iteration of a loop ended with. */
struct rein_verify_iteration {
    enum rein_verify_verdict verdict;
    const struct rein_verify_failing *failing; /* borrowed, n_failing entries */
    size_t n_failing;
    const char *tree_hash; /* borrowed; NULL when unknown */
    double progress;       /* higher is better; NaN when unknown */
    double confidence;     /* the agent's or the report's; NaN when unknown */
    bool external_blocker; /* the agent needs a person or an outside resource */
    const char *summary;   /* borrowed: what was tried in this iteration; may be NULL */
    bool needs_review;     /* a person must review before the result counts (the judge said
                              NEEDS_REVIEW or could not decide); stops a loop whose checks
                              hold with REIN_VERIFY_STOP_NEEDS_REVIEW */
};

struct rein_verify_term_opts {
    int max_iterations;          /* 0: 10 */
    int same_error_limit;        /* the same failing signatures this many times in a row: 3 */
    int no_progress_limit;       /* this many iterations in a row without progress: 5 */
    int convergence_limit;       /* this many tiny improvements in a row while below the
                                   goal: 3 */
    double convergence_epsilon;  /* an improvement smaller than this is tiny: 0.01 */
    double progress_goal;        /* 1.0 */
    double min_confidence;       /* below: stop (REIN_VERIFY_CONFIDENCE_GIVE_UP) */
    int progress_window;         /* extend the limit when one of the last N made progress: 3 */
    bool continue_on_blocking;   /* the seed stops at once on a P0 failure; a fixing loop may
                                   prefer to iterate, bounded by the detectors */
    bool no_extension;           /* never extend the limit */
    double oscillation_variance; /* the last five values of the metric vary less than this
                                    while going up and down: oscillation; 0: 0.01 */
};

enum rein_verify_action {
    REIN_VERIFY_CONTINUE = 0,
    REIN_VERIFY_STOP = 1,
};

/*
 * Why the loop stopped (none: continuing):
 *   blocking_failure  a P0 check failed
 *   needs_review      the checks hold but a person must look (the judge's NEEDS_REVIEW or
 *                     unverifiable verdict, layer 6)
 * Set by the loop (include/rein/loop.h), never by the tracker: cancelled (the loop's cancel
 * handle was triggered), provider_error (the agent's model could not be asked), error (rein
 * could not go on: memory, a broken working tree).
 */
#define REIN_VERIFY_STOP_MAP(X)                                                                    \
    X(NONE, "none")                                                                                \
    X(SUCCESS, "success")                                                                          \
    X(SUCCESS_WITH_WARNINGS, "success_with_warnings")                                              \
    X(BLOCKING_FAILURE, "blocking_failure")                                                        \
    X(MAX_ITERATIONS, "max_iterations")                                                            \
    X(SAME_ERROR, "same_error")                                                                    \
    X(NO_PROGRESS, "no_progress")                                                                  \
    X(REPEATED_STATE, "repeated_state")                                                            \
    X(OSCILLATION, "oscillation")                                                                  \
    X(CONVERGENCE_STALL, "convergence_stall")                                                      \
    X(LOW_CONFIDENCE, "low_confidence")                                                            \
    X(EXTERNAL_BLOCKER, "external_blocker")                                                        \
    X(NEEDS_REVIEW, "needs_review")                                                                \
    X(CANCELLED, "cancelled")                                                                      \
    X(PROVIDER_ERROR, "provider_error")                                                            \
    X(ERROR, "error")
#define REIN__VERIFY_STOP_ENUM(id, name) REIN_VERIFY_STOP_##id,
enum rein_verify_stop_reason { REIN_VERIFY_STOP_MAP(REIN__VERIFY_STOP_ENUM) };
#undef REIN__VERIFY_STOP_ENUM
/* "success", "same_error", "oscillation", "needs_review", …; "none" for NONE. */
REIN_EXTERN const char *rein_verify_stop_reason_name(enum rein_verify_stop_reason r);
/* The same in words for a person ("the same failure kept coming back"). Static. */
REIN_EXTERN const char *rein_verify_stop_reason_text(enum rein_verify_stop_reason r);

/* The decision after an iteration. Strings are borrowed from the tracker until its next add. */
struct rein_verify_decision {
    enum rein_verify_action action;
    enum rein_verify_stop_reason reason;
    int iteration;          /* 1-based number of the iteration just added */
    int max_iterations;     /* the limit now in force (after an extension) */
    bool extended;          /* this decision extended the limit */
    bool progress;          /* this iteration made progress */
    const char *message;    /* what happened and what was tried (stops only; else "") */
    const char *suggestion; /* what a person should do (stops only; else "") */
};

typedef struct rein_verify_term rein_verify_term;

/* opts (borrowed, may be NULL) is copied. NULL when memory is exhausted. */
REIN_EXTERN rein_verify_term *rein_verify_term_new(const struct rein_verify_term_opts *opts);
REIN_EXTERN void rein_verify_term_free(rein_verify_term *t);
/*
 * Records one iteration (borrowed; copied) and decides. After a STOP every further add
 * fails with REIN_ESTATE. Errors: REIN_ENOMEM (nothing recorded), REIN_ESTATE.
 */
REIN_EXTERN rein_err rein_verify_term_add(rein_verify_term *t,
                                          const struct rein_verify_iteration *it,
                                          struct rein_verify_decision *out,
                                          rein_error *err) REIN_WUR;
/*
 * rein_verify_term_add with the iteration taken from a report: its verdict, failing
 * protocols (name and signature), refuted claims, progress and confidence. tree_hash and
 * summary are borrowed and may be NULL.
 */
REIN_EXTERN rein_err rein_verify_term_add_report(rein_verify_term *t, const rein_verify_report *r,
                                                 const char *tree_hash, const char *summary,
                                                 struct rein_verify_decision *out,
                                                 rein_error *err) REIN_WUR;

/*
 * Hash of the working tree at dir (borrowed; NULL: current directory) into out (64 hex
 * digits and a NUL). In a git repository: every file git would track (tracked, or untracked
 * and not ignored), by path and content; elsewhere every regular file under dir except .git
 * (at most 20000 files and 256 MiB, else REIN_ETOOBIG). Contents are hashed, not times, so
 * touching a file does not change the hash.
 */
REIN_EXTERN rein_err rein_verify_tree_hash(const char *dir, char out[REIN_VERIFY_HASH_LEN + 1],
                                           rein_error *err) REIN_WUR;
/*
 * The state of an iteration: the tree hash (may be NULL) with the failing checks (borrowed;
 * order does not matter) into out. Two iterations with the same state hash are the same
 * state.
 */
REIN_EXTERN void rein_verify_state_hash(const char *tree_hash,
                                        const struct rein_verify_failing *failing, size_t n,
                                        char out[REIN_VERIFY_HASH_LEN + 1]);

/* ---- LLM judge (layer 5) -------------------------------------------------------------- */

/* UNVERIFIABLE: rein_verify_judge_run only, no valid verdict came. */
#define REIN_VERIFY_JUDGE_MAP(X)                                                                   \
    X(PASS, "PASS")                                                                                \
    X(FAIL, "FAIL")                                                                                \
    X(NEEDS_REVIEW, "NEEDS_REVIEW")                                                                \
    X(UNVERIFIABLE, "UNVERIFIABLE")
#define REIN__VERIFY_JUDGE_ENUM(id, name) REIN_VERIFY_JUDGE_##id,
enum rein_verify_judge_verdict { REIN_VERIFY_JUDGE_MAP(REIN__VERIFY_JUDGE_ENUM) };
#undef REIN__VERIFY_JUDGE_ENUM
/* "PASS", "FAIL", "NEEDS_REVIEW", "UNVERIFIABLE". */
REIN_EXTERN const char *rein_verify_judge_verdict_name(enum rein_verify_judge_verdict v);

/*
 * The JSON Schema (2020-12) of a judge's reply, as static text:
 * {functionality_score: 0-10, quality_score: 0-10, risks: [string], verdict: "PASS" | "FAIL"
 * | "NEEDS_REVIEW", reasoning: non-empty string, confidence?: 0-1}, no other members.
 */
REIN_EXTERN const char *rein_verify_judge_schema(void);
/*
 * A new prompt asking a judge to evaluate diff against requirement (both borrowed), ending
 * with the reply format. NULL when memory is exhausted.
 */
REIN_EXTERN char *rein_verify_judge_prompt(const char *requirement, const char *diff);
/*
 * Checks a parsed reply (borrowed) against the schema, with the JSON Schema validator
 * (<rein/schema.h>) that checks every tool call's arguments. REIN_OK when it conforms;
 * otherwise REIN_EINVALID and, when errors is not NULL, a new JSON array of {"path",
 * "message"} in the tool-call error style ("/verdict": "must be one of \"PASS\", \"FAIL\",
 * \"NEEDS_REVIEW\", got \"OK\""), which is what the model reads to fix its reply.
 * REIN_ENOMEM.
 */
REIN_EXTERN rein_err rein_verify_judge_check(const json_t *reply, json_t **errors,
                                             rein_error *err) REIN_WUR;
/*
 * Parses a judge's reply text (borrowed; a ```json fence or text around one JSON object is
 * tolerated) and checks it. REIN_OK with *reply a new reference; REIN_EPARSE when no JSON
 * object can be read (err has the reason; *errors gets one entry at path "/"); REIN_EINVALID
 * with *errors as above (and *reply still set, for the record). errors and reply may be NULL.
 */
REIN_EXTERN rein_err rein_verify_judge_parse(const char *text, size_t len, json_t **reply,
                                             json_t **errors, rein_error *err) REIN_WUR;
/* The verdict of a conforming reply (borrowed). */
REIN_EXTERN enum rein_verify_judge_verdict rein_verify_judge_verdict(const json_t *reply);
/*
 * The confidence of a conforming reply: its "confidence" when given, else the lower score /
 * 10; NEEDS_REVIEW caps it below REIN_VERIFY_CONFIDENCE_HIGH.
 */
REIN_EXTERN double rein_verify_judge_confidence(const json_t *reply);

/*
 * The change of the tree at dir (borrowed; NULL: current directory) for a judge to read: a
 * unified diff against base (borrowed revision; NULL: HEAD, or the index in a repository
 * without commits) with every untracked, not ignored file shown as a new file (binary files
 * named only). At most max_bytes (0: 64 KiB), cut at a line with a note. *out receives new
 * text; "" outside a git repository. Errors: REIN_EINVAL for a base git does not know,
 * REIN_ENOMEM, REIN_EIO.
 */
REIN_EXTERN rein_err rein_verify_diff(const char *dir, const char *base, size_t max_bytes,
                                      char **out, rein_error *err) REIN_WUR;

/*
 * Asking a judge. The judge is a model call offered one tool, "verdict", whose parameters are
 * rein_verify_judge_schema(), with tool_choice naming it: the model's arguments go through
 * the call pipeline (rein_call_run: name repair, parsing, preflight against the schema) like
 * any tool call. A reply that answers in text instead is read as the verdict's arguments
 * (the JSON object in it, or the whole text) and goes through the same pipeline. A reply
 * that does not pass is fed back once as the pipeline's invalid payload (as the tool result
 * of the call, or as a user message when there was no call), and the model answers again;
 * when no valid verdict has come after max_attempts replies the verdict is UNVERIFIABLE,
 * as it is when the model cannot be asked. The judge's conversation is its own: it sees the
 * requirement and the diff, not the agent's reasoning.
 */
struct rein_verify_judge_opts {
    int max_attempts;         /* replies asked for; 0: 2 (one invalid verdict fed back once) */
    size_t max_diff_bytes;    /* the diff is cut (with a note) beyond this; 0: 64 KiB */
    int64_t max_tokens;       /* per reply; 0: 2048 */
    rein_cancel *cancel;      /* borrowed; may be NULL */
    const char *instructions; /* borrowed; extra text for the judge (project rules); NULL */
};

typedef struct rein_verify_judge_result rein_verify_judge_result;

/*
 * Asks the model p (borrowed) to judge diff against requirement (both borrowed; diff may be
 * NULL or empty: the prompt says that no diff is available). opts may be NULL. Returns
 * REIN_OK with a new result whatever the verdict (UNVERIFIABLE included, with the reason);
 * fails only with REIN_EINVAL (NULL arguments), REIN_ECANCELED (opts->cancel triggered) or
 * REIN_ENOMEM. Runs on the calling thread.
 */
REIN_EXTERN rein_err rein_verify_judge_run(rein_provider *p, const char *requirement,
                                           const char *diff,
                                           const struct rein_verify_judge_opts *opts,
                                           rein_verify_judge_result **out,
                                           rein_error *err) REIN_WUR;
REIN_EXTERN void rein_verify_judge_result_free(rein_verify_judge_result *r);
REIN_EXTERN enum rein_verify_judge_verdict
rein_verify_judge_result_verdict(const rein_verify_judge_result *r);
/* The conforming verdict object (borrowed), or NULL when UNVERIFIABLE. */
REIN_EXTERN const json_t *rein_verify_judge_result_reply(const rein_verify_judge_result *r);
/* The judge's reasoning, or why the verdict is UNVERIFIABLE. Borrowed, never NULL. */
REIN_EXTERN const char *rein_verify_judge_result_reason(const rein_verify_judge_result *r);
/* rein_verify_judge_confidence() of the reply; 0 when UNVERIFIABLE. */
REIN_EXTERN double rein_verify_judge_result_confidence(const rein_verify_judge_result *r);
/* Replies the model gave (1 when the first was valid). */
REIN_EXTERN int rein_verify_judge_result_attempts(const rein_verify_judge_result *r);
/*
 * A new JSON object: {"verdict": "PASS" | "FAIL" | "NEEDS_REVIEW" | "UNVERIFIABLE",
 * "reply": {…the verdict…} | null, "reason", "confidence", "attempts", "errors": [{path,
 * message}] (the last invalid reply's; [] when none), "input_tokens", "output_tokens"}.
 * NULL when memory is exhausted.
 */
REIN_EXTERN json_t *rein_verify_judge_result_json(const rein_verify_judge_result *r);

#ifdef __cplusplus
}
#endif
#endif /* REIN_VERIFY_H */
