/*
 * The report of a verification run: the verdict after the seed's decision tree, the overall
 * confidence, the progress metric the loop tracks, the accessors and the JSON shape that
 * `rein verify --json` prints and the store will keep.
 *
 * Decision tree (seed 2.3): everything passed → SUCCESS; a P0 or P1 protocol failed, or a
 * claim was refuted → FAILED; only P2 protocols failed → SUCCESS_WITH_WARNINGS. Uncertainty
 * is a warning too: an unverifiable claim, nothing verified at all, or an overall confidence
 * below REIN_VERIFY_CONFIDENCE_HIGH (the result is UNVERIFIED) turns SUCCESS into
 * SUCCESS_WITH_WARNINGS, never into a silent SUCCESS.
 */
#include "report_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

bool rein__report_note(rein_verify_report *r, const char *fmt, ...)
{
    char buf[400];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    return json_array_append_new(r->notes, rein__verify_jstr(buf)) == 0;
}

void rein_verify_report_free(rein_verify_report *r)
{
    if (!r)
        return;
    for (size_t i = 0; r->r && i < r->n; i++) {
        json_decref(r->r[i].diagnostics);
        json_decref(r->r[i].steps);
        rein_free(r->r[i].tail);
        rein_free(r->r[i].reason);
        rein_free(r->r[i].name);
        json_decref(r->r[i].judge);
        json_decref(r->r[i].output);
        rein_free(r->r[i].review_why);
    }
    rein_free(r->r);
    rein_claims_free(r->claims);
    json_decref(r->notes);
    json_decref(r->review_reasons);
    rein_free(r);
}

enum rein_verify_verdict rein__verify_verdict(const rein_verify_report *r)
{
    bool warn = false, any = false;

    for (size_t i = 0; i < r->n; i++) {
        const struct rein__presult *p = &r->r[i];
        any |= p->ran;
        /* A check that could not be decided is no failure, and no pass either. */
        warn |= p->status == REIN_VERIFY_STATUS_UNVERIFIABLE;
        if (p->status != REIN_VERIFY_STATUS_FAILED)
            continue;
        if (p->priority != REIN_VERIFY_P2)
            return REIN_VERIFY_FAILED;
        warn = true;
    }
    for (size_t i = 0; i < rein_claims_count(r->claims); i++) {
        enum rein_claim_status s = rein_claims_get(r->claims, i)->status;
        any = true;
        if (s == REIN_CLAIM_REFUTED)
            return REIN_VERIFY_FAILED;
        warn |= s != REIN_CLAIM_CONFIRMED;
    }
    if (warn || !any || r->confidence < REIN_VERIFY_CONFIDENCE_HIGH)
        return REIN_VERIFY_SUCCESS_WITH_WARNINGS;
    return REIN_VERIFY_SUCCESS;
}

/* One protocol's share of the progress metric. */
static double protocol_progress(const struct rein__presult *p)
{
    const struct rein_verify_counts *c = &p->counts;

    if (p->status == REIN_VERIFY_STATUS_PASSED)
        return 1.0;
    if (p->status != REIN_VERIFY_STATUS_FAILED)
        return 0.0;
    if (c->has_tests && c->passed + c->failed > 0)
        return (double)c->passed / (double)(c->passed + c->failed);
    if (c->has_diagnostics)
        return 1.0 / (1.0 + (double)c->errors);
    return 0.0;
}

void rein__report_finish(rein_verify_report *r)
{
    double conf = 1.0, sum = 0;
    size_t items = 0;

    for (size_t i = 0; i < r->n; i++) {
        const struct rein__presult *p = &r->r[i];
        if (p->ran)
            conf = rein_verify_confidence_propagate(conf, &p->confidence, 1);
        if (p->status != REIN_VERIFY_STATUS_SKIPPED) {
            sum += protocol_progress(p);
            items++;
        }
    }
    for (size_t i = 0; i < rein_claims_count(r->claims); i++) {
        const struct rein_claim *c = rein_claims_get(r->claims, i);
        conf = rein_verify_confidence_propagate(conf, &c->confidence, 1);
        sum += c->status == REIN_CLAIM_CONFIRMED      ? 1.0
               : c->status == REIN_CLAIM_UNVERIFIABLE ? 0.5
                                                      : 0.0;
        items++;
    }
    r->confidence = conf;
    r->progress = items ? sum / (double)items : 0.0;
    r->verdict = rein__verify_verdict(r);
    if (!items)
        rein__report_note(r, "nothing was verified: no protocol was selected and no claim was "
                             "made");
    for (size_t i = 0; i < r->n; i++) {
        const struct rein__presult *p = &r->r[i];
        if (p->ran &&
            rein_verify_confidence_level(p->confidence) != REIN_VERIFY_CONFIDENCE_LEVEL_HIGH)
            rein__report_note(r, "%s is %s (confidence %.2f)%s%s", p->name,
                              rein_verify_confidence_label(p->confidence), p->confidence,
                              p->reason && p->reason[0] ? ": " : "", p->reason ? p->reason : "");
    }
}

enum rein_verify_verdict rein_verify_report_verdict(const rein_verify_report *r)
{
    return r->verdict;
}

enum rein_verify_mode rein_verify_report_mode(const rein_verify_report *r)
{
    return r->mode;
}

double rein_verify_report_confidence(const rein_verify_report *r)
{
    return r->confidence;
}

double rein_verify_report_progress(const rein_verify_report *r)
{
    return r->progress;
}

size_t rein_verify_report_protocol_count(const rein_verify_report *r)
{
    return r->n;
}

bool rein_verify_report_protocol(const rein_verify_report *r, size_t i,
                                 struct rein_verify_protocol_info *info)
{
    const struct rein__presult *p;

    if (i >= r->n)
        return false;
    p = &r->r[i];
    memset(info, 0, sizeof(*info));
    info->name = p->name;
    info->priority = p->priority;
    info->status = p->status;
    info->group = p->group;
    info->started_ms = p->started_ms;
    info->ended_ms = p->ended_ms;
    info->duration_ms = p->duration_ms;
    info->attempts = p->attempts;
    info->flaky = p->flaky;
    info->for_claim = p->for_claim;
    info->counts = p->counts;
    info->output_tail = p->tail ? p->tail : "";
    info->reason = p->reason ? p->reason : "";
    info->signature = p->signature;
    info->confidence = p->ran ? p->confidence : 0.0;
    return true;
}

const rein_claims *rein_verify_report_claims(const rein_verify_report *r)
{
    return r->claims;
}

/* ---- JSON ---- */

static json_t *counts_json(const struct rein_verify_counts *c)
{
    json_t *o = json_object();
    json_t *(*num)(json_int_t) = json_integer;

    if (!o)
        return NULL;
    if (json_object_set_new(o, "passed", c->has_tests ? num(c->passed) : json_null()) ||
        json_object_set_new(o, "failed", c->has_tests ? num(c->failed) : json_null()) ||
        json_object_set_new(o, "skipped", c->has_tests ? num(c->skipped) : json_null()) ||
        json_object_set_new(o, "total", c->has_tests ? num(c->total) : json_null()) ||
        json_object_set_new(o, "errors", c->has_diagnostics ? num(c->errors) : json_null()) ||
        json_object_set_new(o, "warnings", c->has_diagnostics ? num(c->warnings) : json_null()) ||
        json_object_set_new(o, "format", c->format[0] ? json_string(c->format) : json_null()) ||
        json_object_set_new(o, "coverage",
                            c->has_coverage ? json_real(c->coverage) : json_null())) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* Rounds a confidence for output, so 0.7 prints as 0.7 and not 0.69999999999999996. */
static json_t *conf_json(double c)
{
    return json_real(round(c * 1000) / 1000);
}

static json_t *protocol_json(const struct rein__presult *p)
{
    json_t *o = json_pack("{s:s, s:s, s:s, s:i, s:I, s:I, s:I, s:i, s:b, s:b}", "name", p->name,
                          "priority", rein_verify_priority_name(p->priority), "status",
                          rein_verify_status_name(p->status), "group", p->group, "duration_ms",
                          (json_int_t)p->duration_ms, "started_ms", (json_int_t)p->started_ms,
                          "ended_ms", (json_int_t)p->ended_ms, "attempts", p->attempts, "flaky",
                          p->flaky, "for_claim", p->for_claim);

    if (!o)
        return NULL;
    if (json_object_set_new(o, "counts", counts_json(&p->counts)) ||
        json_object_set_new(o, "diagnostics",
                            p->diagnostics ? json_incref(p->diagnostics) : json_array()) ||
        json_object_set_new(o, "steps", p->steps ? json_incref(p->steps) : json_array()) ||
        json_object_set_new(o, "output_tail", rein__verify_jstr(p->tail ? p->tail : "")) ||
        json_object_set_new(o, "reason", rein__verify_jstr(p->reason ? p->reason : "")) ||
        json_object_set_new(o, "signature",
                            p->signature[0] ? json_string(p->signature) : json_null()) ||
        json_object_set_new(o, "confidence", p->ran ? conf_json(p->confidence) : json_null()) ||
        json_object_set_new(o, "unverified",
                            json_boolean(p->ran && p->confidence < REIN_VERIFY_CONFIDENCE_HIGH)) ||
        (p->judge && json_object_set_new(o, "judge", json_incref(p->judge))) ||
        (p->output && json_object_set_new(o, "output", json_incref(p->output)))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *changes_json(const struct rein_verify_changes *c)
{
    if (!c->known)
        return json_pack("{s:b}", "known", 0);
    return json_pack("{s:b, s:b, s:b, s:b, s:b, s:b, s:b, s:I}", "known", 1, "files_added",
                     c->files_added, "files_modified", c->files_modified, "files_deleted",
                     c->files_deleted, "dependencies_changed", c->dependencies_changed,
                     "api_changed", c->api_changed, "security_sensitive", c->security_sensitive,
                     "changed_count", (json_int_t)c->changed_count);
}

json_t *rein_verify_report_json(const rein_verify_report *r)
{
    json_t *o = json_pack("{s:s, s:s}", "verdict", rein_verify_verdict_name(r->verdict), "mode",
                          rein_verify_mode_name(r->mode));
    json_t *protocols = json_array();
    json_t *claims = r->claims ? rein_claims_json(r->claims, false) : json_array();
    int rc;

    if (!o || !protocols || !claims)
        goto out_fail;
    for (size_t i = 0; i < r->n; i++) {
        if (json_array_append_new(protocols, protocol_json(&r->r[i])))
            goto out_fail;
    }
    if (json_object_set_new(o, "confidence", conf_json(r->confidence)) ||
        json_object_set_new(o, "progress", conf_json(r->progress)))
        goto out_fail;
    /* set_new takes the value even when it fails, so it is not ours to free afterwards. */
    rc = json_object_set_new(o, "protocols", protocols);
    protocols = NULL;
    if (rc)
        goto out_fail;
    rc = json_object_set_new(o, "claims", claims);
    claims = NULL;
    if (rc || json_object_set_new(o, "changes", changes_json(&r->changes)) ||
        ((r->review_mode || r->review_required) &&
         json_object_set_new(o, "review",
                             json_pack("{s:b, s:O}", "required", r->review_required, "reasons",
                                       r->review_reasons))) ||
        json_object_set(o, "notes", r->notes))
        goto out_fail;
    return o;

out_fail:
    json_decref(o);
    json_decref(protocols);
    json_decref(claims);
    return NULL;
}
