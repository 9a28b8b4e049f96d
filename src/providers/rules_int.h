/*
 * What the rules provider's files share (rules.c, rules_answer.c; not for other files): the
 * state read from the history and the text being composed.
 */
#ifndef REIN_RULES_INT_H
#define REIN_RULES_INT_H

#include "router_int.h"

/* What happened after the last user message. */
struct rein__rules_state {
    const char *message; /* the last user message (borrowed from the history) */
    enum rein__lang lang;
    size_t calls_made; /* calls the replies after it made */
    json_t *results;   /* [{tool, content (parsed or string), arguments}] in order; new */
    bool failed;       /* the last result was not a success */
};

/* Text being composed; the first failed append is kept in rc (a failed append changes
 * nothing, so the text stays well-formed). */
struct rein__text {
    struct rein_buf b;
    rein_err rc;
};

/* The answer from the results, in the request's language. */
void rein__rules_compose(const struct rein__rules_state *st, struct rein__text *t);
/* The steps of plan that did not route, named after the answer (nothing when none). */
void rein__rules_skipped(const struct rein__rules_state *st, const struct rein__route_plan *plan,
                         struct rein__text *t);
/* What rein can do offline, for a request that did not route. */
void rein__rules_unroutable(const rein_model_request *req, const struct rein__rules_state *st,
                            struct rein__text *t);

#endif /* REIN_RULES_INT_H */
