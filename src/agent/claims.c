/*
 * The agent turn's answer, checked against the turn's own calls (issue 14; include/rein/
 * claims.h). A model can only act through calls, so a claim in its answer that a tool ran, a
 * file was written or deleted or a function was added needs a successful call of this turn
 * behind it; the working tree is not read (the server's directory is not the agent's world).
 * Refuted claims go into a "claims" event and the result's meta.claims; with verification
 * force the first answer that has any is sent back once to be corrected.
 */
#include "agent_int.h"

#include <rein/claims.h>
#include <string.h>

#define REASK_CLAIMS_MAX 5

/* The entries this turn added to the ledger (a plan step's only: its ledger is shared). */
static json_t *turn_ledger(struct turn *t)
{
    json_t *out = json_array();
    size_t n = rein_ledger_count(t->ledger);

    for (size_t i = t->ledger_mark; out && i < n; i++) {
        json_t *e = rein_ledger_entry_json(t->ledger, i);
        const json_t *step = json_object_get(e, "step");
        if (e && t->o->has_step && json_integer_value(step) != t->o->step) {
            json_decref(e);
            continue;
        }
        if (!e || json_array_append_new(out, e)) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

/* The refuted claims of the text the turn holds (new array), or NULL on ENOMEM. */
static json_t *refuted(struct turn *t)
{
    json_t *ledger = turn_ledger(t), *out = NULL;
    rein_claims_vocab *vocab = ledger ? rein_claims_vocab_new(t->a->reg, NULL) : NULL;
    rein_claims *claims = NULL;

    if (vocab && rein_claims_vocab_add_ledger(vocab, ledger) == REIN_OK)
        claims = rein_claims_extract(t->text.ptr, t->text.len, vocab, NULL);
    if (claims) {
        struct rein_claims_evidence ev = {.ledger = ledger, .reg = t->a->reg};
        if (rein_claims_check(claims, &ev, NULL) == REIN_OK)
            out = rein_claims_json(claims, true);
    }
    rein_claims_free(claims);
    rein_claims_vocab_free(vocab);
    json_decref(ledger);
    return out;
}

static void claims_event(struct turn *t, const json_t *claims, const char *action)
{
    struct rein_agent_event ev;
    char *text;

    if (!rein__turn_wants_events(t))
        return;
    text = rein_json_dumps(claims);
    if (!text)
        return;
    memset(&ev, 0, sizeof(ev));
    ev.type = REIN_AGENT_EV_CLAIMS;
    ev.kind = action;
    ev.json = text;
    ev.json_len = strlen(text);
    rein__turn_emit(t, &ev);
    rein_free(text);
}

void rein__turn_claims_report(struct turn *t)
{
    if (t->o->verification == REIN_AGENT_VERIFY_OFF || t->o->mode == REIN_AGENT_MODE_PROPOSE ||
        t->text.len == 0)
        return;
    json_decref(t->refuted);
    t->refuted = refuted(t);
    t->claims_read = t->refuted != NULL;
    if (!t->refuted)
        rein__turn_error_event(t, "warning",
                               "the answer's claims could not be checked: out of "
                               "memory");
    else if (json_array_size(t->refuted) > 0)
        claims_event(t, t->refuted, "report");
}

/* "Your answer says …" for the refuted claims (new), or NULL on ENOMEM. What does not fit
 * in the buffer's bound is left out. */
static char *correction(const json_t *claims)
{
    struct rein_buf b;
    size_t i;
    const json_t *c;
    rein_err rc;
    char *out;

    rein_buf_init(&b, 8192);
    rc = rein_buf_adds(&b, "rein checked your answer against the tool calls of this turn.");
    json_array_foreach(claims, i, c)
    {
        if (rc || i == REASK_CLAIMS_MAX)
            break;
        rc = rein_buf_addf(&b, "\n- Your answer says \"%s\", but no call shows it: %s",
                           json_string_value(json_object_get(c, "text")),
                           json_string_value(json_object_get(c, "evidence")));
    }
    if (!rc)
        rc = rein_buf_adds(&b, "\nCorrect the answer: do it now with a tool call, or say plainly "
                               "what was not done.");
    out = rc == REIN_ENOMEM ? NULL : rein_buf_detach(&b, NULL);
    rein_buf_release(&b);
    return out;
}

bool rein__turn_claims_reask(struct turn *t)
{
    json_t *claims;
    char *msg;

    if (t->o->verification != REIN_AGENT_VERIFY_FORCE || t->claims_sent ||
        t->o->mode == REIN_AGENT_MODE_PROPOSE || t->text.len == 0)
        return false;
    claims = refuted(t);
    if (!claims || json_array_size(claims) == 0) {
        json_decref(claims);
        return false;
    }
    t->claims_sent = true;
    claims_event(t, claims, "reask");
    msg = correction(claims);
    json_decref(claims);
    if (!msg || rein_history_add_user(t->h, msg) != REIN_OK) {
        rein_free(msg);
        return false; /* the answer stands; its claims are still reported */
    }
    rein_free(msg);
    (void)rein__turn_persist_last(t);
    rein_buf_reset(&t->text);
    return !t->fatal;
}
