/*
 * Private pieces shared by the output readers of src/verify/: the line parsers of output.c,
 * the JUnit XML reader (junit.c) and the coverage readers (coverage.c). Each reader keeps its
 * own counts and its own short list of diagnostics, so memory stays bounded however many
 * results an output holds: every result is counted, at most REIN__DIAG_MAX are described.
 */
#ifndef REIN_VERIFY_OUTPUT_INT_H
#define REIN_VERIFY_OUTPUT_INT_H

#include "verify_int.h"

#include <expat.h>

#define REIN__DIAG_MAX     50   /* diagnostics kept per reader (and per report) */
#define REIN__DIAG_MSG_MAX 300  /* bytes of a diagnostic's message */
#define REIN__LINE_MAX     4096 /* bytes of a line the line parsers see (longer lines are cut) */

/* Diagnostics of one reader. Invariant: arr is NULL (not wanted) or holds at most max. */
struct rein__diags {
    json_t *arr;
    size_t max; /* 0: REIN__DIAG_MAX */
    bool oom;
};

/* Test counts of one reader; found when its summary (or its document) was recognised. */
struct rein__tests {
    bool found;
    int64_t passed, failed, skipped, total;
};

/*
 * A new diagnostic object appended to d with "severity", or NULL when d is full, unwanted or
 * out of memory (d->oom). Callers may pass the NULL on to the setters below, which then do
 * nothing: a full list is not an error, it only stops describing.
 */
json_t *rein__diag_new(struct rein__diags *d, const char *severity);
/* Sets key to n bytes of s (cut at REIN__DIAG_MSG_MAX on a character boundary). o may be
 * NULL (nothing happens); s NULL sets nothing. */
void rein__diag_set_str(struct rein__diags *d, json_t *o, const char *key, const char *s, size_t n);
/* Sets key to v when v > 0. o may be NULL. */
void rein__diag_set_int(struct rein__diags *d, json_t *o, const char *key, int64_t v);
/* A failing test named by n bytes of name, with msg (may be NULL or ""); a name already in
 * the list is not added twice. */
void rein__diag_test(struct rein__diags *d, const char *name, size_t n, const char *msg);

/* ---- JUnit XML (junit.c) ---- */

struct rein__junit;
/* A new reader; diagnostics go to a list of its own when want_diags. NULL on ENOMEM. */
struct rein__junit *rein__junit_new(bool want_diags);
void rein__junit_free(struct rein__junit *j);
/*
 * Feeds len bytes of one XML document (or of several, one after another). Bytes before the
 * first '<' of a document are skipped. Never fails: a malformed document stops the reader,
 * and what it counted before stays counted.
 */
void rein__junit_feed(struct rein__junit *j, const char *data, size_t len);
/* Ends the input. *t gets the counts (found when at least one <testsuite> or <testcase> was
 * read); *diags (may be NULL) the failures, a new reference or NULL. false on ENOMEM. */
bool rein__junit_finish(struct rein__junit *j, struct rein__tests *t, json_t **diags);
/* Why the reader stopped early ("line 3: mismatched tag"), or "" when it did not. */
const char *rein__junit_error(const struct rein__junit *j);
/* True once a document's root element has been opened. */
bool rein__junit_started(const struct rein__junit *j);

/* ---- coverage (coverage.c) ---- */

/* A coverage summary line of a tool's text output; coverage.c keeps the last one seen. */
struct rein__cov_lines {
    bool found;
    double percent;
    char tool[16];
};
/* Reads one cleaned line (NUL-terminated) for a coverage total. */
void rein__coverage_line(struct rein__cov_lines *c, const char *line);

#endif /* REIN_VERIFY_OUTPUT_INT_H */
