/*
 * The report of one verification run, private to run.c (which fills it), report.c (verdict,
 * accessors, JSON) and term.c (which reads failing checks from it).
 */
#ifndef REIN_VERIFY_REPORT_INT_H
#define REIN_VERIFY_REPORT_INT_H

#include "verify_int.h"

/* One protocol's result. Invariant: status is SKIPPED or NOT_RUN exactly when ran is false. */
struct rein__presult {
    const struct rein__protocol *proto; /* borrowed from the config during the run; NULL after */
    char *name;                         /* owned copies: the report outlives the config */
    enum rein_verify_priority priority;
    int group;
    enum rein_verify_status status;
    bool ran;
    bool for_claim;
    bool flaky;
    int attempts;
    int stage;          /* position of its group in the run, for confidence inputs */
    int64_t started_ms; /* offsets from the start of the run; -1 when it did not run */
    int64_t ended_ms;
    int64_t duration_ms;
    struct rein_verify_counts counts;
    json_t *diagnostics; /* owned array */
    json_t *steps;       /* owned array of {name, command, status, exit_code, ...} */
    char *tail;          /* owned; "" when it did not run */
    char *reason;        /* owned; "" when there is nothing to say */
    char signature[17];  /* "" unless failed */
    double own_confidence;
    double confidence; /* after propagation */
    json_t *judge;     /* owned: the judge's result for a judged protocol, or NULL */
    json_t *output;    /* owned: the JSON output_schema was applied to, or NULL */
    char *review_why;  /* owned: why a person must look (the judge's NEEDS_REVIEW), or NULL */
};

/* What a judged protocol (FUNCTIONALITY or ARCHITECT without steps) needs. Borrowed. */
struct rein__judged_in {
    const struct rein__protocol *proto;
    const char *cwd;
    const char *base;
    const char *goal;
    rein_provider *judge;
    const struct rein_verify_judge_opts *judge_opts;
    rein_cancel *cancel;
};

/*
 * Runs a judged protocol into p (judged.c): status (passed, failed or unverifiable), reason,
 * counts and diagnostics (FUNCTIONALITY's cases), judge, review_why, own_confidence.
 * Errors: REIN_ENOMEM, REIN_ECANCELED; anything else is a result.
 */
rein_err rein__verify_judged(const struct rein__judged_in *in, struct rein__presult *p);

struct rein_verify_report {
    enum rein_verify_verdict verdict;
    enum rein_verify_mode mode;
    double confidence;
    double progress;
    struct rein__presult *r; /* one per protocol of the config, in run order */
    size_t n;
    rein_claims *claims; /* owned; NULL when no claims text was given */
    struct rein_verify_changes changes;
    bool review_mode; /* thorough or full: the layer-6 review flag applies */
    bool review_required;
    json_t *review_reasons; /* owned array of strings */
    json_t *notes;          /* owned array of strings */
};

/* Appends a note (formatted) to the report; false on ENOMEM. */
bool rein__report_note(rein_verify_report *r, const char *fmt, ...) REIN_PRINTF(2, 3);
/* Computes verdict, confidence and progress from the results and claims. */
void rein__report_finish(rein_verify_report *r);

/*
 * rein_verify_term_add_report for the loop: the iteration is the report's (failing protocols
 * with their signatures, refuted claims, progress, confidence) plus what more (borrowed)
 * adds: more failing checks (a judge's FAIL), a worse verdict, a lower confidence (NaN:
 * none), the tree hash, the summary, external_blocker and needs_review.
 */
rein_err rein__verify_term_add_report(rein_verify_term *t, const rein_verify_report *r,
                                      const struct rein_verify_iteration *more,
                                      struct rein_verify_decision *out, rein_error *err);

/* The loop's name for the judge among the failing checks (term.c, loop.c). */
#define REIN__VERIFY_JUDGE_CHECK "JUDGE"
/* A failing check in words for a person: a protocol's name as it is, "the judge's review",
 * "the refuted claim that the tests pass" for a claim's key "claim:tests_pass:tests". */
rein_err rein__verify_failing_words(struct rein_buf *b, const char *check) REIN_WUR;

#endif /* REIN_VERIFY_REPORT_INT_H */
