/*
 * Private declarations of the verification loop (include/rein/loop.h): loop.c runs it,
 * loop_text.c writes what the agent reads (the first message, the observations) and reads
 * what the agent says about itself (a blocker, a confidence, a summary of what it tried).
 */
#ifndef REIN_VERIFY_LOOP_INT_H
#define REIN_VERIFY_LOOP_INT_H

#include <rein/loop.h>

#include "report_int.h"

/* What the first message needs to know. Everything is borrowed. */
struct rein__loop_brief {
    const char *goal;
    const char *cwd; /* absolute when known */
    const rein_verify_config *cfg;
    const char *const *until; /* NULL: every protocol the mode selects */
    enum rein_verify_mode mode;
    int max_iterations;
};

/* The first message of the loop's conversation: goal, checks, how to answer. New; NULL on
 * ENOMEM. */
char *rein__loop_first_message(const struct rein__loop_brief *b);

/* What the observation after an iteration is made of. Everything is borrowed. */
struct rein__loop_observation {
    int iteration;
    int max_iterations;
    bool extended; /* the limit was just extended */
    const rein_verify_config *cfg;
    const rein_verify_report *report;
    const rein_verify_judge_result *judge; /* NULL: not asked */
    const json_t *history;                 /* the result's iteration records so far (for "tried") */
};

/* The next user message after a failed iteration. New; NULL on ENOMEM. */
char *rein__loop_observation(const struct rein__loop_observation *o);

/*
 * What the agent says it needs, when one line of text (borrowed) starts with "BLOCKED:"
 * (also "BLOCKED -", "阻塞："; markdown emphasis and list marks before it are skipped): true
 * with the rest of the line in why (at most why_len - 1 bytes, NUL-terminated; may be NULL).
 */
bool rein__loop_blocked(const char *text, size_t len, char *why, size_t why_len);

/*
 * One line on what an iteration tried, from the turn's tool calls (borrowed, the array of
 * rein_agent_result_tool_calls_json) and its answer (borrowed): "write_file calc.c,
 * write_file notes.txt; said: \"Fixed add.\"". New; NULL on ENOMEM.
 */
char *rein__loop_summary(const json_t *tool_calls, const char *answer);

/* A copy of value (borrowed) where strings longer than max bytes are shortened with a note:
 * for recording tool arguments (whole files) without keeping them. New; NULL on ENOMEM. */
json_t *rein__loop_shorten(const json_t *value, size_t max);

#endif /* REIN_VERIFY_LOOP_INT_H */
