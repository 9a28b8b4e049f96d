/*
 * The termination decision of a verify loop: after each iteration, continue, stop for a
 * named reason, or extend the iteration limit by half (once).
 *
 * It follows the seed's decision tree and its "cannot complete" signals:
 *   a person must review (needs_review) and nothing failed → stop; SUCCESS → stop; only P2
 *   failing → stop with warnings; a P0 failing → stop (unless the
 *   caller asked to keep fixing); P1 failing → continue while under the limit; at the limit,
 *   extend by half once if one of the last iterations made progress, else stop.
 *   Before the limit, stop early when: the agent reports an external blocker; confidence is
 *   below 0.3; the work oscillates (below); the state equals any earlier one (a repeated
 *   state); the same failures come back 3 times in a row; 5 iterations in a row make no
 *   progress; or the metric creeps up by less than epsilon 3 times in a row while below the
 *   goal (convergence stall).
 *
 * Oscillation, the seed's "metric goes back and forth between A and B", is any of: the
 * variance of the last five values of the tracked metric (the progress) is below the
 * threshold (0.01) while they go up and down (a flat line is the no-progress detector's, a
 * steady climb the convergence detector's); the metric alternates a, b, a, b; the failure
 * signatures alternate A, B, A, B (the same two failures in turn, the metric not improving);
 * or the state (tree hash + failing checks) equals the one two iterations back while the one
 * between differs.
 *
 * Progress means: the metric beat its best so far, fewer checks fail than ever before, or
 * the failures are ones never seen before (the error is changing). The first iteration is
 * the baseline and counts neither way.
 */
#include "report_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SUMMARIES_SHOWN 5

struct iter {
    char state[REIN_VERIFY_HASH_LEN + 1];
    char fail_key[REIN_VERIFY_HASH_LEN + 1]; /* "" when nothing failed */
    bool has_tree;
    size_t n_failing;
    double progress;
    bool progress_made;
    char *summary; /* owned; may be NULL */
    char *failing; /* owned: "TEST, LINT, the refuted claim that the tests pass" */
};

struct rein_verify_term {
    struct rein_verify_term_opts o;
    struct iter *h;
    size_t n, cap;
    int max_iterations;
    int first_max;
    bool extended;
    bool stopped;
    double best;
    bool have_best;
    size_t min_failing;
    struct rein_buf message;
    struct rein_buf suggestion;
    int osc;         /* enum osc of the last oscillation stop */
    double variance; /* the metric's variance when that was OSC_VARIANCE */
};

#define NAME(id, name) name,
static const char *const reason_names[] = {REIN_VERIFY_STOP_MAP(NAME)};
#undef NAME

const char *rein_verify_stop_reason_name(enum rein_verify_stop_reason r)
{
    return (unsigned)r < REIN_ARRAY_SIZE(reason_names) ? reason_names[r] : "unknown";
}

const char *rein_verify_stop_reason_text(enum rein_verify_stop_reason r)
{
    static const char *const texts[] = {"the loop is still running",
                                        "every check passed",
                                        "the required checks passed, with warnings",
                                        "a blocking (P0) check failed",
                                        "the iteration limit was reached",
                                        "the same failure kept coming back",
                                        "the iterations stopped making progress",
                                        "the work came back to a state it had been in before",
                                        "the work went back and forth without getting closer",
                                        "small changes stopped getting closer to the goal",
                                        "the agent's confidence fell too low",
                                        "the agent needs a person or an outside resource",
                                        "a person must review the result",
                                        "the loop was cancelled",
                                        "the agent's model could not be asked",
                                        "rein could not go on"};

    return (unsigned)r < REIN_ARRAY_SIZE(texts) ? texts[r] : "the loop stopped";
}

/* What a refuted claim said, from its key "claim:KIND:SUBJECT" (SUBJECT may hold ':'). */
static rein_err claim_words(struct rein_buf *b, const char *key)
{
    const char *kind = key + 6, *colon = strchr(kind, ':');
    const char *subject = colon ? colon + 1 : "";
    size_t klen = colon ? (size_t)(colon - kind) : strlen(kind);

    rein_err rc = rein_buf_adds(b, "the refuted claim that ");
    if (rc)
        return rc;
#define KIND_IS(word) (klen == sizeof(word) - 1 && strncmp(kind, word, klen) == 0)
    if (KIND_IS("tool"))
        return rein_buf_addf(b, "%s ran", subject);
    if (KIND_IS("file_written"))
        return rein_buf_addf(b, "%s was written", subject);
    if (KIND_IS("file_deleted"))
        return rein_buf_addf(b, "%s was deleted", subject);
    if (KIND_IS("function"))
        return rein_buf_addf(b, "%s was added", subject);
    if (KIND_IS("tests_pass"))
        return rein_buf_adds(b, "the tests pass");
    if (KIND_IS("no_type_errors"))
        return rein_buf_adds(b, "there are no type errors");
    if (KIND_IS("build_passes"))
        return rein_buf_adds(b, "the build passes");
    if (KIND_IS("lint_clean"))
        return rein_buf_adds(b, "the code is lint-clean");
#undef KIND_IS
    return rein_buf_addf(b, "%.*s holds", (int)klen, kind);
}

rein_err rein__verify_failing_words(struct rein_buf *b, const char *check)
{
    if (!check || !check[0])
        return rein_buf_adds(b, "an unnamed check");
    if (strncmp(check, "claim:", 6) == 0)
        return claim_words(b, check);
    if (strcmp(check, REIN__VERIFY_JUDGE_CHECK) == 0)
        return rein_buf_adds(b, "the judge's review");
    return rein_buf_adds(b, check);
}

rein_verify_term *rein_verify_term_new(const struct rein_verify_term_opts *opts)
{
    rein_verify_term *t = rein_calloc(1, sizeof(*t));

    if (!t)
        return NULL;
    if (opts)
        t->o = *opts;
    if (t->o.max_iterations <= 0)
        t->o.max_iterations = 10;
    if (t->o.same_error_limit <= 0)
        t->o.same_error_limit = 3;
    if (t->o.no_progress_limit <= 0)
        t->o.no_progress_limit = 5;
    if (t->o.convergence_limit <= 0)
        t->o.convergence_limit = 3;
    if (!(t->o.convergence_epsilon > 0))
        t->o.convergence_epsilon = 0.01;
    if (!(t->o.progress_goal > 0))
        t->o.progress_goal = 1.0;
    if (!(t->o.min_confidence > 0))
        t->o.min_confidence = REIN_VERIFY_CONFIDENCE_GIVE_UP;
    if (t->o.progress_window <= 0)
        t->o.progress_window = 3;
    if (!(t->o.oscillation_variance > 0))
        t->o.oscillation_variance = 0.01;
    t->max_iterations = t->first_max = t->o.max_iterations;
    rein_buf_init(&t->message, 1 << 16);
    rein_buf_init(&t->suggestion, 1 << 12);
    return t;
}

void rein_verify_term_free(rein_verify_term *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++) {
        rein_free(t->h[i].summary);
        rein_free(t->h[i].failing);
    }
    rein_free(t->h);
    rein_buf_release(&t->message);
    rein_buf_release(&t->suggestion);
    rein_free(t);
}

static int cmp_failing(const void *a, const void *b)
{
    const struct rein_verify_failing *x = a, *y = b;
    int c = strcmp(x->check ? x->check : "", y->check ? y->check : "");

    return c ? c : strcmp(x->signature ? x->signature : "", y->signature ? y->signature : "");
}

/* Sorted copy of the failing list (the pointers are borrowed); NULL on ENOMEM when n > 0. */
static struct rein_verify_failing *sorted(const struct rein_verify_failing *f, size_t n)
{
    struct rein_verify_failing *s = rein_calloc(n + 1, sizeof(*s));

    if (!s)
        return NULL;
    if (n)
        memcpy(s, f, n * sizeof(*s));
    qsort(s, n, sizeof(*s), cmp_failing);
    return s;
}

static void hash_failing(struct rein__sha256 *h, const struct rein_verify_failing *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *c = s[i].check ? s[i].check : "", *g = s[i].signature ? s[i].signature : "";
        rein__sha256_add(h, c, strlen(c) + 1);
        rein__sha256_add(h, g, strlen(g) + 1);
    }
}

void rein_verify_state_hash(const char *tree_hash, const struct rein_verify_failing *failing,
                            size_t n, char out[REIN_VERIFY_HASH_LEN + 1])
{
    struct rein_verify_failing *s = sorted(failing, n);
    struct rein__sha256 h;

    rein__sha256_init(&h);
    rein__sha256_add(&h, "tree", 5);
    rein__sha256_add(&h, tree_hash ? tree_hash : "", tree_hash ? strlen(tree_hash) + 1 : 1);
    if (s) {
        hash_failing(&h, s, n);
    } else {
        /* Out of memory: hash in the given order, which only makes equal states look apart. */
        hash_failing(&h, failing, n);
    }
    rein_free(s);
    rein__sha256_hex(&h, out, REIN_VERIFY_HASH_LEN);
}

static bool fill_iter(struct iter *rec, const struct rein_verify_iteration *it)
{
    struct rein_verify_failing *s = sorted(it->failing, it->n_failing);
    struct rein_buf desc;
    struct rein__sha256 h;
    bool ok = s != NULL;

    rein_buf_init(&desc, 1 << 14);
    rec->has_tree = it->tree_hash != NULL;
    rec->n_failing = it->n_failing;
    rec->progress = it->progress;
    rein_verify_state_hash(it->tree_hash, it->failing, it->n_failing, rec->state);
    rec->fail_key[0] = '\0';
    if (ok && it->n_failing) {
        rein__sha256_init(&h);
        hash_failing(&h, s, it->n_failing);
        rein__sha256_hex(&h, rec->fail_key, REIN_VERIFY_HASH_LEN);
    }
    for (size_t i = 0; ok && i < it->n_failing; i++) {
        ok = (!i || rein_buf_adds(&desc, ", ") == REIN_OK) &&
             rein__verify_failing_words(&desc, s[i].check) == REIN_OK;
    }
    rein_free(s);
    rec->failing = ok ? rein_buf_detach(&desc, NULL) : NULL;
    rec->summary = ok && it->summary ? rein_strndup(it->summary, strnlen(it->summary, 500)) : NULL;
    rein_buf_release(&desc);
    return rec->failing && (!it->summary || rec->summary);
}

/* Did the newest iteration make progress? Updates the bests. */
static bool judge_progress(rein_verify_term *t)
{
    struct iter *cur = &t->h[t->n - 1];
    bool made = false, new_failure = cur->fail_key[0] != '\0';

    for (size_t i = 0; i + 1 < t->n && new_failure; i++)
        new_failure = strcmp(t->h[i].fail_key, cur->fail_key) != 0;
    if (t->n > 1) {
        made = (!isnan(cur->progress) && (!t->have_best || cur->progress > t->best + 1e-9)) ||
               cur->n_failing < t->min_failing || new_failure;
    }
    if (!isnan(cur->progress) && (!t->have_best || cur->progress > t->best)) {
        t->best = cur->progress;
        t->have_best = true;
    }
    if (t->n == 1 || cur->n_failing < t->min_failing)
        t->min_failing = cur->n_failing;
    return made;
}

static int same_error_run(const rein_verify_term *t)
{
    const struct iter *cur = &t->h[t->n - 1];
    int run = 0;

    if (!cur->fail_key[0])
        return 0;
    for (size_t i = t->n; i > 0 && strcmp(t->h[i - 1].fail_key, cur->fail_key) == 0; i--)
        run++;
    return run;
}

static int no_progress_run(const rein_verify_term *t)
{
    int run = 0;

    for (size_t i = t->n; i > 1 && !t->h[i - 1].progress_made; i--)
        run++;
    return run;
}

/* The last five values of the metric: low variance, and they go both up and down. */
static bool metric_variance_low(const rein_verify_term *t, double *var)
{
    const struct iter *h = t->h;
    size_t n = t->n;
    double mean = 0, v = 0;
    bool up = false, down = false;

    if (n < 5)
        return false;
    for (size_t i = n - 5; i < n; i++) {
        if (isnan(h[i].progress) || h[i].progress >= t->o.progress_goal)
            return false;
        mean += h[i].progress / 5;
        if (i > n - 5) {
            up |= h[i].progress > h[i - 1].progress + 1e-9;
            down |= h[i].progress < h[i - 1].progress - 1e-9;
        }
    }
    for (size_t i = n - 5; i < n; i++)
        v += (h[i].progress - mean) * (h[i].progress - mean) / 5;
    *var = v;
    return up && down && v < t->o.oscillation_variance;
}

/* The failures alternate between two signatures (A, B, A, B) and the metric does not
 * improve over them. */
static bool signatures_alternate(const rein_verify_term *t)
{
    const struct iter *h = t->h;
    size_t n = t->n;

    if (n < 4)
        return false;
    for (size_t i = n - 4; i < n; i++) {
        if (!h[i].fail_key[0])
            return false;
    }
    if (strcmp(h[n - 1].fail_key, h[n - 3].fail_key) != 0 ||
        strcmp(h[n - 2].fail_key, h[n - 4].fail_key) != 0 ||
        strcmp(h[n - 1].fail_key, h[n - 2].fail_key) == 0)
        return false;
    for (size_t i = n - 3; i < n; i++) {
        if (!isnan(h[i].progress) && !isnan(h[n - 4].progress) &&
            h[i].progress > h[n - 4].progress + t->o.convergence_epsilon)
            return false; /* the metric climbs: that is progress, not a swing */
    }
    return true;
}

static bool metric_oscillates(const rein_verify_term *t)
{
    const struct iter *h = t->h;
    size_t n = t->n;

    if (n < 4)
        return false;
    for (size_t i = n - 4; i < n; i++) {
        if (isnan(h[i].progress))
            return false;
    }
    return fabs(h[n - 1].progress - h[n - 3].progress) < 1e-9 &&
           fabs(h[n - 2].progress - h[n - 4].progress) < 1e-9 &&
           fabs(h[n - 1].progress - h[n - 2].progress) >= 1e-9;
}

static bool converging_slowly(const rein_verify_term *t)
{
    size_t k = (size_t)t->o.convergence_limit;

    if (t->n < k + 1)
        return false;
    for (size_t i = t->n - k; i < t->n; i++) {
        double a = t->h[i - 1].progress, b = t->h[i].progress;
        if (isnan(a) || isnan(b) || b >= t->o.progress_goal || !(b - a > 0) ||
            b - a >= t->o.convergence_epsilon)
            return false;
    }
    return true;
}

/* The earlier iteration (1-based) with the same state, or 0. */
static size_t repeated_state(const rein_verify_term *t)
{
    const struct iter *cur = &t->h[t->n - 1];

    if (!cur->has_tree)
        return 0;
    for (size_t i = 0; i + 1 < t->n; i++) {
        if (t->h[i].has_tree && strcmp(t->h[i].state, cur->state) == 0)
            return i + 1;
    }
    return 0;
}

/* Which oscillation was seen (for the message), or OSC_NONE. */
enum osc { OSC_NONE, OSC_STATE, OSC_METRIC, OSC_SIGNATURES, OSC_VARIANCE };

static enum osc oscillates(rein_verify_term *t)
{
    const struct iter *h = t->h;
    size_t n = t->n;

    if (n >= 3 && h[n - 1].has_tree && h[n - 3].has_tree && h[n - 2].has_tree &&
        strcmp(h[n - 1].state, h[n - 3].state) == 0 && strcmp(h[n - 1].state, h[n - 2].state) != 0)
        return OSC_STATE;
    if (metric_oscillates(t))
        return OSC_METRIC;
    if (signatures_alternate(t))
        return OSC_SIGNATURES;
    if (metric_variance_low(t, &t->variance))
        return OSC_VARIANCE;
    return OSC_NONE;
}

static bool progress_recently(const rein_verify_term *t)
{
    for (size_t i = t->n, k = 0; i > 1 && k < (size_t)t->o.progress_window; i--, k++) {
        if (t->h[i - 1].progress_made)
            return true;
    }
    return false;
}

static const char *suggestion_for(enum rein_verify_stop_reason r)
{
    switch (r) {
    case REIN_VERIFY_STOP_SUCCESS:
        return "";
    case REIN_VERIFY_STOP_SUCCESS_WITH_WARNINGS:
        return "Review the warnings (desired checks that failed, results that could not be "
               "verified) before relying on the result.";
    case REIN_VERIFY_STOP_BLOCKING_FAILURE:
        return "Fix the blocking failure first: nothing else can be trusted until it passes. "
               "Look at its output, fix it or give the agent a concrete hint, and run again.";
    case REIN_VERIFY_STOP_OSCILLATION:
        return "The agent keeps undoing its own change. Decide which of the two versions is "
               "right (or what both miss), tell the agent, and run again.";
    case REIN_VERIFY_STOP_CONVERGENCE_STALL:
        return "Small adjustments are not reaching the goal. 1) Step in and try a different "
               "approach, 2) redefine the goal, or 3) accept the current result.";
    case REIN_VERIFY_STOP_LOW_CONFIDENCE:
        return "The result is too uncertain to build on: check it by hand, or ask the agent to "
               "verify its claims, then run again.";
    case REIN_VERIFY_STOP_EXTERNAL_BLOCKER:
        return "Provide what the agent needs (access, a decision, a missing resource), then run "
               "again.";
    case REIN_VERIFY_STOP_NEEDS_REVIEW:
        return "Review the change yourself (the judge's reasoning and risks are in the report): "
               "accept it, or run again saying what must change.";
    case REIN_VERIFY_STOP_MAX_ITERATIONS:
        return "Review what was tried. Raise the limit only if the last iterations were getting "
               "closer; otherwise 1) step in, 2) redefine the goal, or 3) accept the current "
               "result.";
    default:
        break;
    }
    return "Look at the failing checks yourself; the agent could not get past them. Then 1) fix "
           "them or give the agent a concrete hint, 2) narrow or restate the goal, or 3) accept "
           "the current result.";
}

static rein_err write_message(rein_verify_term *t, enum rein_verify_stop_reason r, size_t earlier)
{
    const struct iter *cur = &t->h[t->n - 1];
    struct rein_buf *m = &t->message;
    size_t shown = 0, first;
    rein_err rc;

    rein_buf_reset(m);
    rein_buf_reset(&t->suggestion);
    rc = rein_buf_addf(m, "Stopped after %zu iteration%s: ", t->n, t->n == 1 ? "" : "s");
    switch (r) {
    case REIN_VERIFY_STOP_SUCCESS:
        rc = rc ? rc : rein_buf_adds(m, "every check passed.");
        break;
    case REIN_VERIFY_STOP_SUCCESS_WITH_WARNINGS:
        rc = rc ? rc : rein_buf_adds(m, "the required checks passed; warnings remain.");
        break;
    case REIN_VERIFY_STOP_BLOCKING_FAILURE:
        rc = rc ? rc : rein_buf_adds(m, "a blocking (P0) check failed.");
        break;
    case REIN_VERIFY_STOP_MAX_ITERATIONS:
        rc = rc ? rc
                : rein_buf_addf(m, "reached the iteration limit of %d%s.", t->max_iterations,
                                t->extended ? " (already extended by half once)"
                                            : " without recent progress");
        break;
    case REIN_VERIFY_STOP_SAME_ERROR:
        rc = rc ? rc
                : rein_buf_addf(m, "the same failure came back %d times in a row.",
                                same_error_run(t));
        break;
    case REIN_VERIFY_STOP_NO_PROGRESS:
        rc = rc ? rc
                : rein_buf_addf(m, "%d iterations in a row made no progress.", no_progress_run(t));
        break;
    case REIN_VERIFY_STOP_REPEATED_STATE:
        rc = rc ? rc
                : rein_buf_addf(m,
                                "the working tree and the failing checks are exactly "
                                "as they were after iteration %zu.",
                                earlier);
        break;
    case REIN_VERIFY_STOP_OSCILLATION:
        if (rc)
            break;
        if (t->osc == OSC_SIGNATURES)
            rc = rein_buf_adds(m, "the failures alternate between the same two (A, B, A, B) "
                                  "without getting closer to the goal.");
        else if (t->osc == OSC_VARIANCE)
            rc = rein_buf_addf(m,
                               "the progress metric went back and forth over the last five "
                               "iterations (variance %.2g, below %g) without reaching the goal.",
                               t->variance, t->o.oscillation_variance);
        else
            rc = rein_buf_adds(m, "the work alternates between two states.");
        break;
    case REIN_VERIFY_STOP_CONVERGENCE_STALL:
        rc = rc ? rc
                : rein_buf_addf(m,
                                "convergence stalled: %d small adjustments in a row "
                                "improved the progress metric by less than %g each "
                                "(now %.3f, goal %g).",
                                t->o.convergence_limit, t->o.convergence_epsilon, cur->progress,
                                t->o.progress_goal);
        break;
    case REIN_VERIFY_STOP_LOW_CONFIDENCE:
        rc = rc ? rc : rein_buf_addf(m, "confidence fell below %.2f.", t->o.min_confidence);
        break;
    case REIN_VERIFY_STOP_EXTERNAL_BLOCKER:
        rc = rc ? rc : rein_buf_adds(m, "the agent needs a person or an outside resource.");
        break;
    case REIN_VERIFY_STOP_NEEDS_REVIEW:
        rc = rc ? rc
                : rein_buf_adds(m, "the checks hold, but a person must review the result "
                                   "before it counts.");
        break;
    case REIN_VERIFY_STOP_NONE:
    case REIN_VERIFY_STOP_CANCELLED:
    case REIN_VERIFY_STOP_PROVIDER_ERROR:
    case REIN_VERIFY_STOP_ERROR:
        break;
    }
    if (!rc && cur->failing && cur->failing[0])
        rc = rein_buf_addf(m, " Still failing: %s.", cur->failing);
    for (size_t i = 0; i < t->n; i++)
        shown += t->h[i].summary != NULL;
    first = t->n > SUMMARIES_SHOWN ? t->n - SUMMARIES_SHOWN : 0;
    if (!rc && shown)
        rc = rein_buf_adds(m, " Tried:");
    for (size_t i = first; !rc && i < t->n; i++) {
        if (t->h[i].summary)
            rc = rein_buf_addf(m, " (%zu) %s;", i + 1, t->h[i].summary);
    }
    if (!rc && shown && m->ptr[m->len - 1] == ';')
        m->ptr[m->len - 1] = '.';
    if (!rc)
        rc = rein_buf_adds(&t->suggestion, suggestion_for(r));
    return rc;
}

static enum rein_verify_stop_reason
decide(rein_verify_term *t, const struct rein_verify_iteration *it, size_t *earlier, bool *extend)
{
    bool p0 = false;

    *earlier = 0;
    *extend = false;
    for (size_t i = 0; i < it->n_failing; i++)
        p0 |= it->failing[i].priority == REIN_VERIFY_P0;
    /* Layer 6: checks that hold are not the end when someone must look first. */
    if (it->needs_review && it->verdict != REIN_VERIFY_FAILED)
        return REIN_VERIFY_STOP_NEEDS_REVIEW;
    if (it->verdict == REIN_VERIFY_SUCCESS)
        return REIN_VERIFY_STOP_SUCCESS;
    if (it->verdict == REIN_VERIFY_SUCCESS_WITH_WARNINGS)
        return REIN_VERIFY_STOP_SUCCESS_WITH_WARNINGS;
    if (p0 && !t->o.continue_on_blocking)
        return REIN_VERIFY_STOP_BLOCKING_FAILURE;
    if (it->external_blocker)
        return REIN_VERIFY_STOP_EXTERNAL_BLOCKER;
    if (!isnan(it->confidence) && it->confidence < t->o.min_confidence)
        return REIN_VERIFY_STOP_LOW_CONFIDENCE;
    t->osc = oscillates(t);
    if (t->osc != OSC_NONE)
        return REIN_VERIFY_STOP_OSCILLATION;
    *earlier = repeated_state(t);
    if (*earlier)
        return REIN_VERIFY_STOP_REPEATED_STATE;
    if (same_error_run(t) >= t->o.same_error_limit)
        return REIN_VERIFY_STOP_SAME_ERROR;
    if (no_progress_run(t) >= t->o.no_progress_limit)
        return REIN_VERIFY_STOP_NO_PROGRESS;
    if (converging_slowly(t))
        return REIN_VERIFY_STOP_CONVERGENCE_STALL;
    if ((int)t->n >= t->max_iterations) {
        if (t->extended || t->o.no_extension || !progress_recently(t))
            return REIN_VERIFY_STOP_MAX_ITERATIONS;
        *extend = true;
    }
    return REIN_VERIFY_STOP_NONE;
}

rein_err rein_verify_term_add(rein_verify_term *t, const struct rein_verify_iteration *it,
                              struct rein_verify_decision *out, rein_error *err)
{
    enum rein_verify_stop_reason reason;
    struct iter *rec;
    size_t earlier;
    bool extend;

    if (t->stopped)
        return rein_error_set(err, REIN_ESTATE, "the loop has already stopped");
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        struct iter *h = rein_realloc(t->h, cap * sizeof(*h));
        if (!h)
            return rein_error_set(err, REIN_ENOMEM, "out of memory");
        t->h = h;
        t->cap = cap;
    }
    rec = &t->h[t->n];
    memset(rec, 0, sizeof(*rec));
    if (!fill_iter(rec, it)) {
        rein_free(rec->summary);
        rein_free(rec->failing);
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    }
    t->n++;
    rec->progress_made = judge_progress(t);
    reason = decide(t, it, &earlier, &extend);
    memset(out, 0, sizeof(*out));
    out->iteration = (int)t->n;
    out->progress = rec->progress_made;
    out->reason = reason;
    out->action = reason == REIN_VERIFY_STOP_NONE ? REIN_VERIFY_CONTINUE : REIN_VERIFY_STOP;
    if (extend) {
        t->max_iterations += (t->max_iterations + 1) / 2;
        t->extended = true;
        out->extended = true;
    }
    out->max_iterations = t->max_iterations;
    rein_buf_reset(&t->message);
    rein_buf_reset(&t->suggestion);
    if (out->action == REIN_VERIFY_STOP) {
        t->stopped = true;
        if (write_message(t, reason, earlier))
            rein_buf_reset(&t->message); /* the decision stands without its prose */
    }
    out->message = t->message.ptr;
    out->suggestion = t->suggestion.ptr;
    return REIN_OK;
}

rein_err rein__verify_term_add_report(rein_verify_term *t, const rein_verify_report *r,
                                      const struct rein_verify_iteration *more,
                                      struct rein_verify_decision *out, rein_error *err)
{
    size_t nclaims = rein_claims_count(r->claims), n = 0;
    struct rein_verify_failing *f = rein_calloc(r->n + nclaims + more->n_failing + 1, sizeof(*f));
    char(*keys)[200] = rein_calloc(nclaims + 1, sizeof(*keys));
    struct rein_verify_iteration it = *more;
    rein_err rc;

    if (!f || !keys) {
        rein_free(f);
        rein_free(keys);
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < r->n; i++) {
        const struct rein__presult *p = &r->r[i];
        if (p->status == REIN_VERIFY_STATUS_FAILED)
            f[n++] = (struct rein_verify_failing){p->name, p->signature, p->priority};
    }
    for (size_t i = 0; i < nclaims; i++) {
        const struct rein_claim *c = rein_claims_get(r->claims, i);
        if (c->status != REIN_CLAIM_REFUTED)
            continue;
        snprintf(keys[i], sizeof(keys[i]), "claim:%s:%s", rein_claim_kind_name(c->kind),
                 c->subject);
        f[n++] = (struct rein_verify_failing){keys[i], "", REIN_VERIFY_P1};
    }
    for (size_t i = 0; i < more->n_failing; i++)
        f[n++] = more->failing[i];
    /* The worse verdict and the lower confidence win: extra checks can only take away. */
    it.verdict = more->verdict > r->verdict ? more->verdict : r->verdict;
    it.failing = f;
    it.n_failing = n;
    it.progress = r->progress;
    it.confidence = isnan(more->confidence) || more->confidence > r->confidence ? r->confidence
                                                                                : more->confidence;
    rc = rein_verify_term_add(t, &it, out, err);
    rein_free(f);
    rein_free(keys);
    return rc;
}

rein_err rein_verify_term_add_report(rein_verify_term *t, const rein_verify_report *r,
                                     const char *tree_hash, const char *summary,
                                     struct rein_verify_decision *out, rein_error *err)
{
    struct rein_verify_iteration more = {.verdict = REIN_VERIFY_SUCCESS,
                                         .tree_hash = tree_hash,
                                         .confidence = NAN,
                                         .summary = summary};

    return rein__verify_term_add_report(t, r, &more, out, err);
}
