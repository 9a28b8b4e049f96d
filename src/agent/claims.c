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

rein_err rein__turn_ledger_hook(void *userdata, const struct rein_ledger_entry *entry)
{
    struct turn *t = userdata;
    const struct rein_agent_persist *p = t->o->persist;
    /* the filter of turn_ledger: a plan step's entries only (a missing step reads as 0) */
    bool mine = !t->o->has_step || (entry->has_step ? entry->step : 0) == t->o->step;

    pthread_mutex_lock(&t->tools_mu);
    if (mine && entry->tool && t->tools_known) {
        bool seen = false;
        for (size_t i = 0; i < t->ntools_seen && !seen; i++)
            seen = strcmp(t->tools_seen[i], entry->tool) == 0;
        if (!seen) {
            char **grown = rein_realloc(t->tools_seen, (t->ntools_seen + 1) * sizeof(*grown));
            char *name = grown ? rein_strdup(entry->tool) : NULL;
            if (grown)
                t->tools_seen = grown;
            if (name)
                t->tools_seen[t->ntools_seen++] = name;
            else
                t->tools_known = false; /* claims.c reads the ledger instead */
        }
    }
    pthread_mutex_unlock(&t->tools_mu);
    return p && p->ledger ? p->ledger(p->userdata, entry) : REIN_OK;
}

void rein__turn_tools_release(struct turn *t)
{
    for (size_t i = 0; i < t->ntools_seen; i++)
        rein_free(t->tools_seen[i]);
    rein_free(t->tools_seen);
    t->tools_seen = NULL;
    t->ntools_seen = 0;
    t->tools_known = false;
}

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

/*
 * The vocabulary of the registry's tools, made once per registry generation instead of once per
 * turn (about 2% of a turn's instructions through `rein serve`, issue 25). A vocabulary is
 * immutable once made (rein/claims.h), so turns on many threads read one; the last reference
 * frees it, so a turn that still reads a replaced one is safe.
 */
struct rein__vocab_share {
    rein_claims_vocab *v;
    uint64_t gen; /* the registry generation read before v was made */
    atomic_int refs;
};

static void vocab_put(struct rein__vocab_share *sh)
{
    if (sh && atomic_fetch_sub(&sh->refs, 1) == 1) {
        rein_claims_vocab_free(sh->v);
        rein_free(sh);
    }
}

void rein__agent_vocab_drop(rein_agent *a)
{
    vocab_put(a->vocab);
    a->vocab = NULL;
}

/* A reference to the vocabulary of a's registry as it is now (vocab_put), or NULL on ENOMEM
 * or without a registry. Made outside the lock: a registry change meanwhile only makes the
 * next turn make it again (its generation was read first). */
static struct rein__vocab_share *vocab_take(rein_agent *a)
{
    struct rein__vocab_share *sh, *old = NULL;
    uint64_t gen;

    if (!a->reg)
        return NULL;
    gen = rein_registry_generation(a->reg);
    pthread_mutex_lock(&a->vocab_mu);
    sh = a->vocab;
    if (sh && sh->gen == gen)
        atomic_fetch_add(&sh->refs, 1);
    else
        sh = NULL;
    pthread_mutex_unlock(&a->vocab_mu);
    if (sh)
        return sh;
    sh = rein_calloc(1, sizeof(*sh));
    if (!sh)
        return NULL;
    sh->v = rein_claims_vocab_new(a->reg, NULL);
    if (!sh->v) {
        rein_free(sh);
        return NULL;
    }
    sh->gen = gen;
    atomic_init(&sh->refs, 1);
    pthread_mutex_lock(&a->vocab_mu);
    if (!a->vocab || a->vocab->gen < gen) {
        old = a->vocab;
        a->vocab = sh;
        atomic_fetch_add(&sh->refs, 1);
    }
    pthread_mutex_unlock(&a->vocab_mu);
    vocab_put(old);
    return sh;
}

/* True when the shared vocabulary already knows every tool of the turn's ledger (borrowed):
 * adding them would change nothing, so it serves as it is. */
static bool knows_ledger(const rein_claims_vocab *v, const json_t *ledger)
{
    size_t i;
    const json_t *e;

    json_array_foreach(ledger, i, e)
    {
        const char *tool = json_string_value(json_object_get(e, "tool"));
        if (tool && !rein_claims_vocab_covers(v, tool))
            return false;
    }
    return true;
}

/*
 * refuted() without the ledger as JSON, for a turn that knows its entries' tools (its own
 * ledger, every name noted) and whose tools the shared vocabulary covers: the ledger is made
 * only when the answer claims something. Most answers claim nothing, and the ledger's JSON was
 * a third of the check (issue 25). Same vocabulary, same verdicts as refuted(). Returns false
 * when it cannot tell (the caller takes refuted()'s path; a vocabulary of its own depends on
 * the ledger's order), else true with *out (a new array, or NULL on ENOMEM).
 */
static bool refuted_by_names(struct turn *t, json_t **out)
{
    struct rein__vocab_share *sh;
    rein_claims *claims;
    bool known, covered = true;

    sh = vocab_take(t->a);
    /* Read under the lock the hook writes them with (every call has returned by now). */
    pthread_mutex_lock(&t->tools_mu);
    known = t->tools_known;
    for (size_t i = 0; sh && known && covered && i < t->ntools_seen; i++)
        covered = rein_claims_vocab_covers(sh->v, t->tools_seen[i]);
    pthread_mutex_unlock(&t->tools_mu);
    if (!sh || !known || !covered) {
        vocab_put(sh);
        return false;
    }
    *out = NULL;
    claims = rein_claims_extract(t->text.ptr, t->text.len, sh->v, NULL);
    if (claims && rein_claims_count(claims) == 0) {
        *out = json_array();
    } else if (claims) {
        json_t *ledger = turn_ledger(t);
        struct rein_claims_evidence ev = {.ledger = ledger, .reg = t->a->reg};
        if (ledger && rein_claims_check(claims, &ev, NULL) == REIN_OK)
            *out = rein_claims_json(claims, true);
        json_decref(ledger);
    }
    rein_claims_free(claims);
    vocab_put(sh);
    return true;
}

/* The refuted claims of the text the turn holds (new array), or NULL on ENOMEM. */
static json_t *refuted(struct turn *t)
{
    json_t *ledger, *out = NULL;
    struct rein__vocab_share *sh;
    rein_claims_vocab *own = NULL; /* the registry's tools and the ledger's, when they differ */
    const rein_claims_vocab *vocab = NULL;
    rein_claims *claims = NULL;

    if (refuted_by_names(t, &out))
        return out;
    ledger = turn_ledger(t);
    sh = ledger ? vocab_take(t->a) : NULL;

    if (sh && knows_ledger(sh->v, ledger)) {
        vocab = sh->v;
    } else if (ledger) {
        own = rein_claims_vocab_new(t->a->reg, NULL);
        if (own && rein_claims_vocab_add_ledger(own, ledger) == REIN_OK)
            vocab = own;
    }
    if (vocab)
        claims = rein_claims_extract(t->text.ptr, t->text.len, vocab, NULL);
    if (claims) {
        struct rein_claims_evidence ev = {.ledger = ledger, .reg = t->a->reg};
        if (rein_claims_check(claims, &ev, NULL) == REIN_OK)
            out = rein_claims_json(claims, true);
    }
    rein_claims_free(claims);
    rein_claims_vocab_free(own);
    vocab_put(sh);
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
