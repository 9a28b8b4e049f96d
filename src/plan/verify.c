/*
 * The plan verifier (docs/DESIGN.md [cortex], "Verifier"): pure C, no model. A step passes
 * when its current attempt made no calls or none of them is still pending; a pending call is
 * one that was issued and never answered, a lost or hallucinated call.
 *
 * On top of the seed's rule it reads the step's final text with the claims module
 * (include/rein/claims.h) and checks every claim against the attempt's own ledger: "I saved it
 * with write_file", "the calculator returned 2", "Saved notes.txt" need a successful call
 * behind them. The working tree is not consulted: a step acts only through its calls. A
 * refuted claim fails the step, and the reason names it, so the replanner sees what was
 * claimed and why it does not hold.
 */
#include "plan_int.h"

#include <rein/claims.h>
#include <string.h>

#define REASON_MAX 600

struct view {
    const struct rein__plan_step *s;
    json_t *pending, *failed, *claims, *current;
};

static bool status_is(const json_t *e, const char *status)
{
    const char *st = json_string_value(json_object_get(e, "status"));
    return st && strcmp(st, status) == 0;
}

/* The refuted claims of text as report objects in v->claims. */
static rein_err check_text(struct view *v, const char *text, const rein_registry *reg,
                           const char *const *tools, size_t n)
{
    struct rein_claims_evidence ev = {.ledger = v->current, .reg = reg};
    rein_claims_vocab *vocab = rein_claims_vocab_new(reg, NULL);
    rein_claims *claims = NULL;
    json_t *refuted = NULL;
    rein_err rc = vocab ? REIN_OK : REIN_ENOMEM;
    size_t i;
    json_t *c;

    for (size_t k = 0; !rc && tools && k < n; k++)
        rc = tools[k] ? rein_claims_vocab_add(vocab, tools[k]) : REIN_OK;
    if (!rc)
        rc = rein_claims_vocab_add_ledger(vocab, v->current);
    if (!rc)
        claims = rein_claims_extract(text, strlen(text), vocab, NULL);
    if (!rc && !claims)
        rc = REIN_ENOMEM;
    if (!rc)
        rc = rein_claims_check(claims, &ev, NULL);
    if (!rc && !(refuted = rein_claims_json(claims, true)))
        rc = REIN_ENOMEM;
    json_array_foreach(refuted, i, c)
    {
        if (rc)
            break;
        if (json_object_set(c, "reason", json_object_get(c, "evidence")) ||
            json_array_append(v->claims, c))
            rc = REIN_ENOMEM;
    }
    json_decref(refuted);
    rein_claims_free(claims);
    rein_claims_vocab_free(vocab);
    return rc;
}

/* ---- the verdict ---- */

static void describe_calls(struct rein__plan_text *b, const json_t *entries)
{
    size_t k;
    json_t *e;

    json_array_foreach(entries, k, e)
    {
        if (k == 4) {
            rein__plan_text_addf(b, ", …");
            break;
        }
        rein__plan_text_addf(b, "%s%s (%s)", k ? ", " : "",
                             json_string_value(json_object_get(e, "tool")),
                             json_string_value(json_object_get(e, "call_id"))
                                 ? json_string_value(json_object_get(e, "call_id"))
                                 : "no id");
    }
}

static char *reason_text(const struct view *v, bool oom)
{
    struct rein__plan_text b;
    size_t np = json_array_size(v->pending), nc = json_array_size(v->claims);

    rein__plan_text_init(&b, REASON_MAX);
    if (oom) {
        rein__plan_text_adds(&b, "the step could not be verified: out of memory");
    } else if (np == 0 && nc == 0) {
        size_t total = json_array_size(v->current);
        rein__plan_text_addf(&b,
                             total ? "every call of this attempt got its result (%zu)"
                                   : "the step made no tool calls",
                             total);
    } else {
        if (np) {
            rein__plan_text_addf(&b, "%zu call%s never got a response: ", np, np == 1 ? "" : "s");
            describe_calls(&b, v->pending);
        }
        if (nc) {
            json_t *c = json_array_get(v->claims, 0);
            rein__plan_text_addf(&b,
                                 "%sthe step's answer claims what its calls do not show: "
                                 "\"%.160s\" (%s %s): %s%s",
                                 np ? "; " : "", json_string_value(json_object_get(c, "text")),
                                 json_string_value(json_object_get(c, "kind")),
                                 json_string_value(json_object_get(c, "subject")),
                                 json_string_value(json_object_get(c, "evidence")),
                                 nc > 1 ? " (and more)" : "");
        }
    }
    return rein__plan_text_detach(&b);
}

bool rein_plan_verify_step(const rein_plan *p, size_t i, const char *text, const rein_registry *reg,
                           const char *const *tools, size_t n, json_t **report)
{
    struct view v = {0};
    bool passed, oom;
    char *reason;
    size_t k;
    json_t *e;

    if (report)
        *report = NULL;
    if (!p || i >= p->n)
        return false;
    v.s = &p->steps[i];
    v.pending = json_array();
    v.failed = json_array();
    v.claims = json_array();
    v.current = json_array();
    oom = !v.pending || !v.failed || !v.claims || !v.current;
    json_array_foreach(v.s->history, k, e)
    {
        if (oom || !rein__plan_entry_current(v.s, e))
            continue;
        oom = json_array_append(v.current, e) != 0;
        if (status_is(e, "pending"))
            oom |= json_array_append(v.pending, e) != 0;
        else if (status_is(e, "error") || status_is(e, "invalid"))
            oom |= json_array_append(v.failed, e) != 0;
    }
    if (!oom && text && text[0])
        oom = check_text(&v, text, reg, tools, n) != REIN_OK;
    passed = !oom && json_array_size(v.pending) == 0 && json_array_size(v.claims) == 0;
    reason = reason_text(&v, oom);
    if (report) {
        *report = json_pack("{s:b, s:s, s:O, s:O, s:O}", "passed", passed, "reason",
                            reason ? reason : "out of memory", "pending", v.pending, "failed_calls",
                            v.failed, "claims", v.claims);
    }
    rein_free(reason);
    json_decref(v.pending);
    json_decref(v.failed);
    json_decref(v.claims);
    json_decref(v.current);
    return passed;
}
