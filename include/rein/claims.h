/*
 * rein/claims.h: what an agent says it did, checked against what happened (chain of
 * verification, 002_cbbc926b3263d1f9.txt; hallucinated work, 000_47403d59ab6ffe48.txt).
 *
 * One module does it for every consumer: the plan verifier (a step's answer), `rein verify
 * --claims`, `rein loop` (through rein_verify_run) and the agent turn (its final answer).
 *
 * Extraction. A text (English, Simplified or Traditional Chinese) is split into sentences and
 * clauses, and each clause is read for a claim of one of these kinds:
 *
 *   tool            a tool ran or produced something: "I used the calculator", "file_search
 *                   found 3 matches", "according to get_weather, …", "calculator output: 42",
 *                   "我调用了 calculator", "经 web_search 查询", "calculator 返回 2"
 *   file_written    a file written, created, saved, exported, updated or stored
 *   file_deleted    a file deleted or removed
 *   function        a function or method added, implemented or defined (in a file)
 *   tests_pass, build_passes, lint_clean, no_type_errors
 *
 * A claim is an assertion that something happened. The extractor reads the grammar that
 * makes a sentence one: tense and aspect (a past or perfect verb, a present result verb with
 * a concrete value, a stative "is now saved in"; Chinese 了/过/已(经)/完成 and resultative
 * complements), and the classes that make it none: future and plans (will, going to, 会, 将,
 * 打算), conditionals (if, unless, 如果, 若), modals (can, should, might, 可以, 应该, 需要),
 * imperatives ("Add …", "To fix this, run …", 请), questions (a final "?", "Should I …", 吗,
 * 是否), negation (not, never, no one, 没(有), 未, 无法, 不能), failure reports ("X failed",
 * "returned an error", 失败), hedges (probably, 可能), what others said ("the log says …"),
 * and general descriptions of a tool ("the calculator computes means"). Each clause is judged
 * on its own, so "I could not reach web_search, but the calculator returned 2" still claims
 * the calculator.
 *
 * Tools are recognised from a vocabulary (rein_claims_vocab) built from the registry and the
 * ledger: the exact name, any case or separator style ("FileSearch", "file-search", "File
 * Search"), the plain words ("the calculator", "the weather tool" for get_weather) and, for
 * Chinese, the words translated by a small glossary ("计算器", "文件搜索"). A name that is also
 * an ordinary word ("echo", "read") counts only where the sentence treats it as a tool. A
 * tool the vocabulary does not know still counts when the sentence calls it one ("the
 * get_stock tool returned 42").
 *
 * Evidence (rein_claims_check). Each claim is checked on its own:
 *   tool          against the ledger: a success entry for the tool (any of its spellings)
 *                 confirms it; none, or only failed or pending entries, refute it. Without a
 *                 ledger it is unverifiable.
 *   file_written  the ledger (a successful call of a tool that may write, whose arguments or
 *                 result name the file) or the working tree and git (the file exists and is
 *                 new or differs from the base revision; outside git, it exists).
 *   file_deleted  the ledger as above, or the tree: it existed in the base and is gone.
 *   function      the ledger (a successful writing call naming the function), or the
 *                 definition in the named file (or in the project when none is named).
 *   tests, build, lint, types: the matching protocol is run (through run_check) when one is
 *                 declared; else unverifiable.
 * Nothing an agent says it did passes unless the ledger or the tree shows it: when a ledger
 * was given and neither shows it, the claim is refuted; a claim nothing was given to check
 * against is unverifiable, never silently confirmed.
 *
 * Threading: a vocabulary is immutable once built and may be shared by threads; a claims list
 * belongs to one thread at a time. Nothing here keeps global mutable state.
 */
#ifndef REIN_CLAIMS_H
#define REIN_CLAIMS_H

#include <rein/json.h>
#include <rein/provider.h>
#include <rein/tools.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The kinds, in one list so the enum and the names cannot drift apart. Only ever appended. */
#define REIN_CLAIM_KIND_MAP(X)                                                                     \
    X(TOOL, "tool")                                                                                \
    X(FILE_WRITTEN, "file_written")                                                                \
    X(FILE_DELETED, "file_deleted")                                                                \
    X(FUNCTION, "function")                                                                        \
    X(TESTS_PASS, "tests_pass")                                                                    \
    X(BUILD_PASSES, "build_passes")                                                                \
    X(LINT_CLEAN, "lint_clean")                                                                    \
    X(NO_TYPE_ERRORS, "no_type_errors")

enum rein_claim_kind {
#define REIN__CLAIM_KIND_ENUM(id, name) REIN_CLAIM_##id,
    REIN_CLAIM_KIND_MAP(REIN__CLAIM_KIND_ENUM)
#undef REIN__CLAIM_KIND_ENUM
};

#define REIN_CLAIM_STATUS_MAP(X)                                                                   \
    X(UNCHECKED, "unchecked")                                                                      \
    X(CONFIRMED, "confirmed")                                                                      \
    X(REFUTED, "refuted")                                                                          \
    X(UNVERIFIABLE, "unverifiable")

enum rein_claim_status {
#define REIN__CLAIM_STATUS_ENUM(id, name) REIN_CLAIM_##id,
    REIN_CLAIM_STATUS_MAP(REIN__CLAIM_STATUS_ENUM)
#undef REIN__CLAIM_STATUS_ENUM
};

/* "tool", "file_written", …; "unknown" out of range. */
REIN_EXTERN const char *rein_claim_kind_name(enum rein_claim_kind k);
/* false (and *out unchanged) for anything but one of the names above. */
REIN_EXTERN bool rein_claim_kind_parse(const char *text, enum rein_claim_kind *out);
/* "unchecked", "confirmed", "refuted", "unverifiable". */
REIN_EXTERN const char *rein_claim_status_name(enum rein_claim_status s);

/* One claim. Every string is borrowed from its list and stays valid until the list is freed
 * (checking it again replaces evidence). */
struct rein_claim {
    enum rein_claim_kind kind;
    const char *text;    /* the sentence it came from (trimmed, at most 300 bytes) */
    const char *subject; /* the tool as written, the file, the function, or the check
                            ("tests", "build", "lint", "types") */
    const char *tool;    /* TOOL: the registered name it resolved to, or NULL when unknown */
    const char *path;    /* FILE_*, FUNCTION: the file, or NULL */
    const char *name;    /* FUNCTION: the function */
    int line;            /* FUNCTION: the line claimed, or 0 */
    size_t offset;       /* byte offset of the sentence in the text */
    enum rein_claim_status status;
    const char *evidence; /* why confirmed, refuted or unverifiable; "" while unchecked */
    double confidence;    /* in [0, 1]; 0 while unchecked */
};

typedef struct rein_claims rein_claims;
typedef struct rein_claims_vocab rein_claims_vocab;

/* ---- the tool vocabulary ---------------------------------------------------------------- */

/*
 * A new vocabulary holding the tools of reg (borrowed; may be NULL for none). NULL with err
 * set (REIN_ENOMEM) on failure.
 */
REIN_EXTERN rein_claims_vocab *rein_claims_vocab_new(const rein_registry *reg, rein_error *err);
REIN_EXTERN void rein_claims_vocab_free(rein_claims_vocab *v);
/* Adds one tool name (copied), e.g. one a ledger records. Known names are ignored. */
REIN_EXTERN rein_err rein_claims_vocab_add(rein_claims_vocab *v, const char *name) REIN_WUR;
/* Adds the "tool" of every entry of ledger (borrowed array of ledger entries). */
REIN_EXTERN rein_err rein_claims_vocab_add_ledger(rein_claims_vocab *v,
                                                  const json_t *ledger) REIN_WUR;
/* True when rein_claims_vocab_add(v, name) would change nothing: v already knows the name (in
 * any case or separator style), or it has nothing to match by. name is borrowed. */
REIN_EXTERN bool rein_claims_vocab_covers(const rein_claims_vocab *v, const char *name);

/* ---- extraction ------------------------------------------------------------------------- */

/*
 * Extracts the claims of text (len bytes, borrowed; UTF-8, invalid sequences are skipped).
 * vocab (borrowed) names the tools; NULL knows only tools the sentences call tools. Fenced
 * code blocks are not read. Time and memory are linear in len. Returns a new list (possibly
 * empty), or NULL with err set (REIN_ENOMEM).
 */
REIN_EXTERN rein_claims *rein_claims_extract(const char *text, size_t len,
                                             const rein_claims_vocab *vocab, rein_error *err);
/* A new empty list, for claims listed by other means (rein_claims_add). */
REIN_EXTERN rein_claims *rein_claims_new(void);
REIN_EXTERN void rein_claims_free(rein_claims *claims);
REIN_EXTERN size_t rein_claims_count(const rein_claims *claims);
/* Claim i (borrowed, see struct rein_claim); NULL out of range. */
REIN_EXTERN const struct rein_claim *rein_claims_get(const rein_claims *claims, size_t i);
/* How many claims have status s. */
REIN_EXTERN size_t rein_claims_count_status(const rein_claims *claims, enum rein_claim_status s);
/*
 * Appends a claim (all strings copied; path and name may be NULL; subject NULL: path, name or
 * the kind's check) unless the list already has one of that kind about that subject.
 * REIN_ENOMEM.
 */
REIN_EXTERN rein_err rein_claims_add(rein_claims *claims, enum rein_claim_kind kind,
                                     const char *text, const char *subject, const char *path,
                                     const char *name) REIN_WUR;

/* ---- evidence --------------------------------------------------------------------------- */

/*
 * Runs the named protocol ("TEST", "BUILD", "LINT", or "TYPECHECK" with "BUILD" as the
 * fallback) and returns 1 when it passed, 0 when it failed, -1 when there is no such
 * protocol; writes a short reason into why and the result's confidence into *confidence.
 * Called on the checking thread.
 */
typedef int (*rein_claims_run_check_fn)(const char *protocol, char *why, size_t why_len,
                                        double *confidence, void *userdata);

struct rein_claims_evidence {
    const json_t *ledger;     /* borrowed array of ledger entries ({tool, args, status,
                                   result, …}); NULL: there is no ledger to check against */
    const rein_registry *reg; /* borrowed; which tools are read-only (NULL: any may write) */
    bool tree;                /* look at the working tree and git */
    const char *cwd;          /* borrowed; the tree (NULL: the current directory) */
    const char *base;         /* borrowed revision to compare with; NULL: HEAD */
    rein_claims_run_check_fn run_check; /* NULL: tests/build/lint/types are unverifiable */
    void *userdata;
};

/*
 * Checks every claim against ev (borrowed; NULL: nothing to check against), filling status,
 * evidence and confidence. Errors: REIN_ENOMEM; REIN_EINVAL for a base revision git does not
 * know. A claim that cannot be decided is UNVERIFIABLE, not an error.
 */
REIN_EXTERN rein_err rein_claims_check(rein_claims *claims, const struct rein_claims_evidence *ev,
                                       rein_error *err) REIN_WUR;

/*
 * A new JSON array of the claims (all, or only the refuted ones):
 *   [{"kind", "text", "subject", "status", "evidence", "confidence", "tool"?, "path"?,
 *     "name"?, "line"?}]
 * NULL when memory is exhausted.
 */
REIN_EXTERN json_t *rein_claims_json(const rein_claims *claims, bool refuted_only);

/*
 * Reads a ledger from any of the three shapes rein writes: a JSON array of ledger entries,
 * a `rein chat --json` result (its "tool_calls"), or a saved plan ("step_tool_history", all
 * steps). *out receives a new array of entries {tool, args, status, result, call_id?}.
 * REIN_EPARSE (err says which shape was expected) or REIN_ENOMEM.
 */
REIN_EXTERN rein_err rein_claims_ledger_from_json(const json_t *doc, json_t **out,
                                                  rein_error *err) REIN_WUR;

/* ---- source --------------------------------------------------------------------------- */

/*
 * Looks for a definition of the function name (borrowed) in len bytes of source text
 * (borrowed). lang is a file name or extension ("x.c", ".py"): C-family sources (c, h, cc,
 * cpp, hpp, m, java, cs, …) are scanned with comments, strings and preprocessor lines
 * understood; py, js/ts, go, rs, rb, php, kt, swift by pattern. Returns
 *   2  a definition (also `#define name(`), *line its 1-based line
 *   1  only a declaration (a prototype), *line its line
 *   0  neither
 *  -1  the language is not known (a plain-text match is in *line, 0 when none)
 */
REIN_EXTERN int rein_claims_find_function(const char *text, size_t len, const char *lang,
                                          const char *name, int *line);

/* ---- the optional model stage --------------------------------------------------------- */

struct rein_claims_judge_opts {
    int max_attempts;   /* model replies asked for (an invalid one is fed back); 0: 2 */
    int64_t max_tokens; /* of each reply; 0: 2048 */
};

/*
 * Asks the model behind p (borrowed) to list the claims of text (len bytes, borrowed; the
 * first 64 KiB) as one call of the tool "report_claims" (schema: rein_claims_judge_schema()).
 * The arguments go through the call pipeline, so they are validated against that schema like
 * any tool call, and an invalid call gets the pipeline's invalid payload back. Every listed
 * claim that names what it is about is appended to claims (borrowed), where rein checks it
 * like an extracted one; the model's opinion of its truth is never asked for. *listed (may
 * be NULL) gets how many were new. REIN_EPROVIDER when the model cannot be asked or gives no
 * valid list (err says why), REIN_EINVAL, REIN_ENOMEM. Runs on the calling thread.
 */
REIN_EXTERN rein_err rein_claims_judge(rein_provider *p, const char *text, size_t len,
                                       const struct rein_claims_judge_opts *opts,
                                       rein_claims *claims, size_t *listed,
                                       rein_error *err) REIN_WUR;
/* The report_claims tool's parameter schema (JSON text; static). */
REIN_EXTERN const char *rein_claims_judge_schema(void);

#ifdef __cplusplus
}
#endif
#endif /* REIN_CLAIMS_H */
