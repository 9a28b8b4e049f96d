/*
 * Loop and stall detection for a turn (issue 5 item 5; the "cannot complete" signals of
 * docs/DESIGN.md [verification]). Each call's outcome is fed in the model's order and each reply is
 * closed with a ping-pong check. The detector answers with nothing, a warning (which the loop
 * adds to the tool message the model reads) or a stall (which ends the turn):
 *
 *   same error     the same tool failing with the same error in consecutive calls:
 *                  warning at 2, stall at 3 (the seed's "same error three times")
 *   same call      the same tool and canonical arguments giving the same result:
 *                  warning at 2, stall at 3
 *   ping-pong      reply signatures A B A (warning), A B A B (stall)
 *   bad names      unknown or invalid tool names in the turn: warning at 2, stall at 3
 *   invalid run    consecutive calls that could not run: warning at 4, stall at 6
 *
 * Arguments are compared canonically (an object's members in any order hash alike, 1 and 1.0
 * alike) and results without their volatile members (ids, times, latencies), so a repeated
 * call is recognised although every run has a fresh call id.
 */
#include "agent_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define SAME_ERROR_WARN   2
#define SAME_ERROR_STALL  3
#define SAME_CALL_WARN    2
#define SAME_CALL_STALL   3
#define BAD_NAMES_WARN    2
#define BAD_NAMES_STALL   3
#define INVALID_RUN_WARN  4
#define INVALID_RUN_STALL 6

/* ---- hashing ---- */

static uint64_t mix(uint64_t h)
{
    /* splitmix64's finalizer: every input bit reaches every output bit. */
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebULL;
    h ^= h >> 31;
    return h;
}

uint64_t rein__hash_bytes(uint64_t h, const void *p, size_t n)
{
    return mix(rein__fnv1a64(h ^ REIN_FNV64_INIT, p, n) ^ n);
}

static bool is_volatile(const char *key)
{
    static const char *const keys[] = {
        "call_id",    "trace_id",   "id",         "request_id",  "timestamp",  "time", "created",
        "created_at", "updated_at", "latency_ms", "duration_ms", "elapsed_ms", "meta",
    };

    for (size_t i = 0; i < REIN_ARRAY_SIZE(keys); i++) {
        if (strcmp(key, keys[i]) == 0)
            return true;
    }
    return false;
}

uint64_t rein__json_hash(const json_t *v, bool skip_volatile)
{
    uint64_t h, acc = 0;
    const char *key;
    json_t *m;
    size_t i;

    switch (json_typeof(v)) {
    case JSON_OBJECT:
        /* A sum of member hashes: the same members in any order give the same hash. */
        json_object_foreach((json_t *)v, key, m)
        {
            if (skip_volatile && is_volatile(key))
                continue;
            acc += mix(rein__hash_bytes(1, key, strlen(key)) ^
                       (rein__json_hash(m, skip_volatile) * 31));
        }
        return mix(acc ^ 0x6f626a);
    case JSON_ARRAY:
        h = 0x617272;
        json_array_foreach(v, i, m)
        {
            h = mix(h ^ rein__json_hash(m, skip_volatile));
        }
        return h;
    case JSON_STRING:
        return rein__hash_bytes(2, json_string_value(v), json_string_length(v));
    case JSON_INTEGER: {
        json_int_t n = json_integer_value(v);
        return rein__hash_bytes(3, &n, sizeof(n));
    }
    case JSON_REAL: {
        double d = json_real_value(v);
        if (d == floor(d) && fabs(d) < 9.0e15) {
            json_int_t n = (json_int_t)d;
            return rein__hash_bytes(3, &n, sizeof(n));
        }
        return rein__hash_bytes(4, &d, sizeof(d));
    }
    case JSON_TRUE:
        return mix(5);
    case JSON_FALSE:
        return mix(6);
    default:
        return mix(7);
    }
}

/* ---- the detector ---- */

void rein__detect_init(struct rein__detector *d)
{
    memset(d, 0, sizeof(*d));
}

void rein__detect_release(struct rein__detector *d)
{
    rein_free(d->seen);
    memset(d, 0, sizeof(*d));
}

/* The count of (call, result) after this one; 0 when memory ran out (not counted). */
static int seen_count(struct rein__detector *d, uint64_t call, uint64_t result)
{
    for (size_t i = 0; i < d->nseen; i++) {
        if (d->seen[i].call == call && d->seen[i].result == result)
            return ++d->seen[i].count;
    }
    if (d->nseen == d->seen_cap) {
        size_t cap = d->seen_cap ? d->seen_cap * 2 : 16;
        struct rein__seen *s = rein_realloc(d->seen, cap * sizeof(*s));
        if (!s)
            return 0;
        d->seen = s;
        d->seen_cap = cap;
    }
    d->seen[d->nseen++] = (struct rein__seen){call, result, 1};
    return 1;
}

/* Keeps the strongest action; on a tie the first message stays. */
static void raise(enum rein__detect_action *have, enum rein__detect_action now, char *msg,
                  size_t size, const char *text)
{
    if (now <= *have)
        return;
    *have = now;
    snprintf(msg, size, "%s", text);
}

static const char *short_msg(const char *m, char *buf, size_t size)
{
    size_t n = strlen(m);

    if (n < size)
        return m;
    snprintf(buf, size, "%.*s…", (int)(size - 8), m);
    return buf;
}

enum rein__detect_action rein__detect_call(struct rein__detector *d,
                                           const struct rein__detect_call *c, char *msg,
                                           size_t size)
{
    enum rein__detect_action act = DETECT_NONE;
    const char *tool = c->tool ? c->tool : "";
    char text[640], shortm[200];
    int n;

    msg[0] = '\0';
    if (c->code != REIN_CALL_OK) {
        if (d->same_err > 0 && c->result_sig == d->err_sig && strcmp(tool, d->err_tool) == 0) {
            d->same_err++;
        } else {
            d->same_err = 1;
            d->err_sig = c->result_sig;
            snprintf(d->err_tool, sizeof(d->err_tool), "%s", tool);
        }
        if (d->same_err >= SAME_ERROR_STALL) {
            snprintf(text, sizeof(text), "%s failed %d times in a row with the same error: %s",
                     tool, d->same_err,
                     short_msg(c->message ? c->message : "", shortm, sizeof(shortm)));
            raise(&act, DETECT_STALL, msg, size, text);
        } else if (d->same_err == SAME_ERROR_WARN) {
            snprintf(text, sizeof(text),
                     "This is the second time %s failed with the same error. Read the error and "
                     "change the arguments, or choose another approach; a third identical "
                     "failure ends this turn.",
                     tool);
            raise(&act, DETECT_WARN, msg, size, text);
        }
    } else {
        d->same_err = 0;
    }
    if (c->code == REIN_CALL_UNKNOWN_TOOL || c->code == REIN_CALL_INVALID_NAME) {
        d->bad_names++;
        if (d->bad_names >= BAD_NAMES_STALL) {
            snprintf(text, sizeof(text),
                     "the model named tools that do not exist %d times in this turn", d->bad_names);
            raise(&act, DETECT_STALL, msg, size, text);
        } else if (d->bad_names == BAD_NAMES_WARN) {
            raise(&act, DETECT_WARN, msg, size,
                  "Again a call named a tool that does not exist. Call only the tools you were "
                  "given, by their exact names (see available_tools).");
        }
    }
    if (c->status == REIN_CALL_INVALID) {
        d->invalid_run++;
        if (d->invalid_run >= INVALID_RUN_STALL) {
            snprintf(text, sizeof(text), "%d calls in a row could not run (the last: %s)",
                     d->invalid_run,
                     short_msg(c->message ? c->message : "", shortm, sizeof(shortm)));
            raise(&act, DETECT_STALL, msg, size, text);
        } else if (d->invalid_run == INVALID_RUN_WARN) {
            raise(&act, DETECT_WARN, msg, size,
                  "Several calls in a row could not run. Read each error and hint before "
                  "calling again, and fix exactly what they name.");
        }
    } else {
        d->invalid_run = 0;
    }
    n = seen_count(d, c->call_sig, c->result_sig);
    if (n >= SAME_CALL_STALL) {
        snprintf(text, sizeof(text),
                 "%s was called %d times with the same arguments and returned the same result "
                 "each time",
                 tool, n);
        raise(&act, DETECT_STALL, msg, size, text);
    } else if (n == SAME_CALL_WARN) {
        snprintf(text, sizeof(text),
                 "You already called %s with these arguments and got this same result. Do not "
                 "repeat the call: use the result you have, or change the arguments.",
                 tool);
        raise(&act, DETECT_WARN, msg, size, text);
    }
    d->resp_acc += mix(c->call_sig * 0x9e3779b97f4a7c15ULL ^ c->result_sig);
    return act;
}

enum rein__detect_action rein__detect_reply(struct rein__detector *d, char *msg, size_t size)
{
    uint64_t sig = mix(d->resp_acc ^ 0x7265706c79);
    int n;

    msg[0] = '\0';
    d->resp_acc = 0;
    if (d->nresp == 4) {
        memmove(d->resp, d->resp + 1, 3 * sizeof(d->resp[0]));
        d->nresp = 3;
    }
    d->resp[d->nresp++] = sig;
    n = d->nresp;
    if (n < 3 || d->resp[n - 1] != d->resp[n - 3] || d->resp[n - 1] == d->resp[n - 2])
        return DETECT_NONE;
    if (n >= 4 && d->resp[n - 2] == d->resp[n - 4]) {
        snprintf(msg, size,
                 "the model alternated between the same two sets of calls, with "
                 "unchanged results");
        return DETECT_STALL;
    }
    snprintf(msg, size,
             "You are going back and forth between the same calls and their results "
             "do not change. Use the results you have, or try something different.");
    return DETECT_WARN;
}
