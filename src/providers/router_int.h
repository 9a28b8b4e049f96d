/*
 * The rules router (src/providers/router*.c; not for other modules): what the rules provider
 * (rules.c) asks it, and what the router's files share.
 *
 * router.c       the engine: the request normalised (full-width forms, quotes, politeness
 *                stripped), split into parts ("A, then B"), each part routed by the rows,
 *                then by the offered tools' manifest "examples" and "routes"
 * router_rows.c  the rows of the built-in skills: per skill and language, a pattern and the
 *                extractor that turns what it matched into arguments
 * router_args.c  the argument extractors the rows share: numbers and lists, arithmetic in
 *                words, search terms, folders, limits, log files and levels
 */
#ifndef REIN_ROUTER_INT_H
#define REIN_ROUTER_INT_H

#include "provider_int.h"

#include <rein/tools.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

enum rein__lang { REIN__LANG_EN, REIN__LANG_HANS, REIN__LANG_HANT };

#define REIN__ROUTE_MAX_CALLS 8
#define REIN__ROUTE_MAX_PARTS 8

/* One call the request asks for: a tool of the registry and its arguments (new). */
struct rein__routed {
    const rein_tool *tool;
    json_t *args;
};

/* Invariants: calls[0 .. n) are set; n is 0 when the request did not route. skipped[0 ..
 * nskipped) are the steps of a request in sequence ("A, then B") that no row or example
 * understood, as typed (new): the steps that did route run, and the answer names these
 * instead of dropping them. */
struct rein__route_plan {
    struct rein__routed calls[REIN__ROUTE_MAX_CALLS];
    size_t n;
    char *skipped[REIN__ROUTE_MAX_PARTS];
    size_t nskipped;
    enum rein__lang lang;
};

/*
 * Routes text among the tools named in names (n of them; looked up in reg, borrowed). Every
 * part of the request must route, else plan->n is 0; except that a request written as steps
 * in sequence whose steps route only in part yields the calls of those that do and the others
 * in plan->skipped, unless routing it whole accounts for all of it. Returns REIN_OK or REIN_ENOMEM; release
 * the plan with rein__route_plan_release either way.
 */
rein_err rein__router_route(const rein_registry *reg, const char *const *names, size_t n,
                            const char *text, struct rein__route_plan *plan);
void rein__route_plan_release(struct rein__route_plan *plan);
/* The language of a request: Traditional or Simplified Chinese when it has CJK text. */
enum rein__lang rein__router_language(const char *text);
/* True when a built-in row routes to the tool named id (the rows know it). */
bool rein__router_knows(const char *id);

/* ---- shared by router.c, router_rows.c and router_args.c ---- */

/* A request normalised for matching: norm (NUL-terminated) and, for each of its bytes, the
 * offset of the character of orig it came from (map[len] is orig's length). */
struct rein__rtext {
    const char *orig;
    char *norm;
    size_t *map;
    size_t len;
};

/* The part of a request a row sees: norm[b, e) of t, and raw_e before trailing punctuation
 * and politeness were taken off. */
struct rein__part {
    const struct rein__rtext *t;
    size_t b, e, raw_e;
    bool question; /* it started with "can you", "could you", ... */
};

/* A compiled pattern's match against a part: named groups read with rein__group. */
struct rein__match {
    const struct rein__part *part;
    pcre2_code *code;
    pcre2_match_data *md;
};

/* Group name of m as norm offsets [*b, *e); false when it did not take part. */
bool rein__group(const struct rein__match *m, const char *name, size_t *b, size_t *e);
/* Group name as a new string of norm (NULL when absent). */
char *rein__group_dup(const struct rein__match *m, const char *name);

/* Compiles pattern (caseless, UTF, UCP); NULL when it does not compile. */
pcre2_code *rein__router_compile(const char *pattern);

/*
 * A row: when pattern matches a part (it is anchored by its own ^ and $), extract turns the
 * match into calls of the tool (appended to out; at most REIN__ROUTE_MAX_CALLS in all) and
 * returns true, or returns false when the match does not hold arguments after all.
 */
struct rein__row {
    const char *tool;
    enum rein__lang lang; /* the language the row is written in (for people reading it) */
    const char *pattern;
    bool (*extract)(const struct rein__match *m, const rein_tool *tool,
                    struct rein__route_plan *out);
};
extern const struct rein__row rein__router_rows[];
extern const size_t rein__router_nrows;

/* Appends a call of tool with args (taken); false when the plan is full or args is NULL. */
bool rein__plan_add(struct rein__route_plan *out, const rein_tool *tool, json_t *args);

/* ---- router_args.c ---- */
/* Numbers of a list written any way ("[1,2,3]", "3, 4 and 8", "3、4、8", "1 2 3", units and
 * currency signs dropped, number words read); a new array, or NULL when text holds anything
 * else. */
json_t *rein__args_numbers(const char *text);
/* An arithmetic expression from words ("2 乘以 21", "15% of 200", "square root of 16"): a new
 * string the calculator reads, or NULL when text is not arithmetic. */
char *rein__args_expression(const char *text);
/* The statistic a word names ("average", "平均值", "最大值"): mean, sum, ...; or NULL. */
const char *rein__args_statistic(const char *word, size_t len);
/* The longest statistic word at p (its length in *len), or NULL. */
const char *rein__args_statistic_at(const char *p, size_t *len);
/* Takes the modifiers a search or log request may carry out of text (in place): "at most 5"
 * (*limit), "in the docs folder" (*dir, new), a quoted term (*quoted, new). */
void rein__args_modifiers(char *text, long *limit, char **dir, char **quoted);
/* The search term left in text after its filler words ("the docs for", "files containing",
 * "包含 … 的文件"); a new string, or NULL when nothing sensible is left. */
char *rein__args_search_term(const char *text);
/* The log file named in text (new), or NULL. */
char *rein__args_log_path(const char *text);
/* The minimum level a request about logs asks for ("errors", "警告"), or NULL. */
const char *rein__args_log_level(const char *text);
/* Trims ASCII and ideographic spaces and quotes at both ends of s (in place); returns s. */
char *rein__args_trim(char *s);

#endif /* REIN_ROUTER_INT_H */
