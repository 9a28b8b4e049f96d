/*
 * The words of the verification loop: what the agent reads and what the loop reads back.
 *
 * The first message states the goal, where the work happens, the checks that will decide it
 * (with the commands they run, so the agent can run them itself when it has a tool for that)
 * and the two lines the loop understands in an answer: "BLOCKED: …" and "confidence: N".
 * Each observation after a failed iteration is the seed's "perceive" step
 * (docs/DESIGN.md [verification]): the error messages and tool output of the last action,
 * filtered to what matters (failing checks with a bounded output tail, refuted claims, the
 * judge's objections), plus a compressed line per earlier iteration from the third on, so
 * the agent does not repeat what already failed.
 */
#include "loop_int.h"

#include <stdio.h>
#include <string.h>

#define TAIL_BYTES      3000
#define TAIL_LINES      40
#define TRIED_SHOWN     6
#define SUMMARY_MAX     300
#define SAID_MAX        120
#define SUMMARY_CALLS   4
#define OBSERVATION_MAX ((size_t)256 << 10)

/* ---- the checks, as the agent should see them ---- */

static const struct rein__protocol *find_protocol(const rein_verify_config *cfg, const char *name)
{
    for (size_t i = 0; i < cfg->nprotocols; i++) {
        if (strcmp(cfg->protocols[i].name, name) == 0)
            return &cfg->protocols[i];
    }
    return NULL;
}

/* "`make -s test`" or "`make all`, then `make check`" (at most three steps shown). */
static rein_err add_commands(struct rein_buf *b, const struct rein__protocol *p)
{
    rein_err rc = REIN_OK;

    for (size_t i = 0; i < p->nsteps && i < 3 && !rc; i++)
        rc = rein_buf_addf(b, "%s`%s`", i ? ", then " : "", p->steps[i].command);
    if (!rc && p->nsteps > 3)
        rc = rein_buf_addf(b, " and %zu more step%s", p->nsteps - 3, p->nsteps == 4 ? "" : "s");
    return rc;
}

static rein_err add_check_line(struct rein_buf *b, const struct rein__protocol *p)
{
    rein_err rc = rein_buf_addf(b, "- %s (%s): ", p->name, rein_verify_priority_name(p->priority));

    if (!rc && p->judged)
        rc = rein_buf_adds(b, p->case_command ? "a reviewer proposes cases from the goal and "
                                                "runs them with "
                              : strcmp(p->name, "ARCHITECT") == 0
                                  ? "a reviewer judges the design of your change"
                                  : "a reviewer judges whether your change does what the goal "
                                    "asks");
    if (!rc && p->judged && p->case_command)
        rc = rein_buf_addf(b, "`%s`", p->case_command);
    else if (!rc)
        rc = add_commands(b, p);
    return rc ? rc : rein_buf_addch(b, '\n');
}

char *rein__loop_first_message(const struct rein__loop_brief *br)
{
    struct rein_buf b;
    rein_err rc;
    char *out;

    rein_buf_init(&b, OBSERVATION_MAX);
    rc = rein_buf_addf(&b,
                       "%s\n\n"
                       "You are working in %s. Change files there with your tools; the checks "
                       "see only what is in the working tree.\n\n",
                       br->goal, br->cwd);
    if (!rc && br->until) {
        rc = rein_buf_adds(&b, "When you answer without calling a tool, rein runs these "
                               "checks, and every one must pass:\n");
        for (size_t i = 0; !rc && br->until[i]; i++) {
            const struct rein__protocol *p = find_protocol(br->cfg, br->until[i]);
            rc = p ? add_check_line(&b, p) : REIN_OK;
        }
    } else if (!rc) {
        rc = rein_buf_addf(&b,
                           "When you answer without calling a tool, rein runs the checks of "
                           "this project (%s mode):\n",
                           rein_verify_mode_name(br->mode ? br->mode : br->cfg->mode));
        for (size_t i = 0; !rc && i < br->cfg->nprotocols; i++)
            rc = add_check_line(&b, &br->cfg->protocols[i]);
    }
    if (!rc)
        rc = rein_buf_addf(
            &b,
            "\nWhen a check fails you get its output and another try, up to %d iterations. "
            "Say briefly what you changed: rein checks what you claim (\"tests pass\", \"I "
            "created x.c\") against the tree. If you cannot go on without a person or "
            "something outside the working tree, answer with a line \"BLOCKED: <what you "
            "need>\". You may end your answer with a line \"confidence: N\" (N from 0 to 1).",
            br->max_iterations);
    out = rc ? NULL : rein_buf_detach(&b, NULL);
    rein_buf_release(&b);
    return out;
}

/* ---- observations ---- */

/* "1 of 4 tests failed; 2 errors, 1 warning" from the counts, or "" (borrowed buffer). */
static void counts_text(const struct rein_verify_counts *c, char *out, size_t n)
{
    size_t len = 0;

    out[0] = '\0';
    if (c->has_tests)
        len = (size_t)snprintf(out, n, "%lld of %lld tests failed", (long long)c->failed,
                               (long long)c->total);
    if (c->has_diagnostics && len < n)
        snprintf(out + len, n - len, "%s%lld error%s, %lld warning%s", len ? "; " : "",
                 (long long)c->errors, c->errors == 1 ? "" : "s", (long long)c->warnings,
                 c->warnings == 1 ? "" : "s");
}

/* The last TAIL_LINES lines (at most TAIL_BYTES) of a protocol's output, fenced. */
static rein_err add_tail(struct rein_buf *b, const char *tail)
{
    size_t len = strlen(tail), tl, lines = 0;
    const char *t = rein__verify_tail(tail, len, TAIL_BYTES, &tl);
    const char *start = t + tl;

    while (start > t && lines <= TAIL_LINES)
        lines += *--start == '\n';
    if (*start == '\n')
        start++;
    tl = (size_t)(t + tl - start);
    while (tl && (start[tl - 1] == '\n' || start[tl - 1] == ' '))
        tl--;
    if (tl == 0)
        return rein_buf_adds(b, "It printed nothing.\n");
    return rein_buf_addf(b, "Last lines of its output:\n```\n%.*s\n```\n", (int)tl, start);
}

static rein_err add_failed(struct rein_buf *b, const struct rein__loop_observation *o,
                           const struct rein_verify_protocol_info *p)
{
    const struct rein__protocol *proto = find_protocol(o->cfg, p->name);
    char counts[160];
    rein_err rc;

    counts_text(&p->counts, counts, sizeof(counts));
    rc = rein_buf_addf(b, "\n%s failed (%s", p->name, rein_verify_priority_name(p->priority));
    if (!rc && proto) {
        rc = rein_buf_adds(b, ", ");
        rc = rc ? rc : add_commands(b, proto);
    }
    if (!rc)
        rc = rein_buf_addf(b, ")%s%s%s%s.\n", counts[0] || (p->reason && p->reason[0]) ? ": " : "",
                           counts, counts[0] && p->reason && p->reason[0] ? "; " : "",
                           p->reason ? p->reason : "");
    return rc ? rc : add_tail(b, p->output_tail ? p->output_tail : "");
}

static rein_err add_claims(struct rein_buf *b, const rein_verify_report *r)
{
    const rein_claims *claims = rein_verify_report_claims(r);
    bool first = true;
    rein_err rc = REIN_OK;

    for (size_t i = 0; !rc && i < rein_claims_count(claims); i++) {
        const struct rein_claim *c = rein_claims_get(claims, i);
        if (c->status != REIN_CLAIM_REFUTED)
            continue;
        if (first)
            rc = rein_buf_adds(b, "\nWhat you said that nothing shows:\n");
        first = false;
        if (!rc)
            rc = rein_buf_addf(b, "- You said: \"%s\". But: %s\n", c->text,
                               c->evidence && c->evidence[0] ? c->evidence : "it is not so.");
    }
    return rc;
}

static rein_err add_judge(struct rein_buf *b, const rein_verify_judge_result *j)
{
    const json_t *reply = j ? rein_verify_judge_result_reply(j) : NULL;
    const json_t *risks = json_object_get(reply, "risks"), *risk;
    size_t i;
    rein_err rc;

    if (!j || rein_verify_judge_result_verdict(j) != REIN_VERIFY_JUDGE_FAIL)
        return REIN_OK;
    rc = rein_buf_addf(b,
                       "\nA reviewer (an LLM judge reading the diff) rejected the change "
                       "(functionality %g/10, quality %g/10): %s\n",
                       json_number_value(json_object_get(reply, "functionality_score")),
                       json_number_value(json_object_get(reply, "quality_score")),
                       rein_verify_judge_result_reason(j));
    json_array_foreach(risks, i, risk)
    {
        if (!rc)
            rc = rein_buf_addf(b, "%s%s", i ? "; " : "Risks: ", json_string_value(risk));
    }
    if (!rc && json_array_size(risks))
        rc = rein_buf_addch(b, '\n');
    return rc;
}

/* "Passed: BUILD, LINT." and "Not run: TEST (…)." lines. */
static rein_err add_others(struct rein_buf *b, const rein_verify_report *r)
{
    struct rein_verify_protocol_info p;
    bool any_passed = false, any_not_run = false;
    rein_err rc = REIN_OK;

    for (size_t i = 0; !rc && rein_verify_report_protocol(r, i, &p); i++) {
        if (p.status != REIN_VERIFY_STATUS_PASSED)
            continue;
        rc = rein_buf_addf(b, "%s%s", any_passed ? ", " : "\nPassed: ", p.name);
        any_passed = true;
    }
    if (!rc && any_passed)
        rc = rein_buf_adds(b, ".\n");
    for (size_t i = 0; !rc && rein_verify_report_protocol(r, i, &p); i++) {
        if (p.status != REIN_VERIFY_STATUS_NOT_RUN)
            continue;
        rc = rein_buf_addf(b, "%s%s (%s)", any_not_run ? ", " : "\nNot run: ", p.name,
                           p.reason && p.reason[0] ? p.reason : "not reached");
        any_not_run = true;
    }
    if (!rc && any_not_run)
        rc = rein_buf_adds(b, ".\n");
    return rc;
}

static rein_err add_tried(struct rein_buf *b, const json_t *history)
{
    size_t n = json_array_size(history), first = n > TRIED_SHOWN ? n - TRIED_SHOWN : 0;
    rein_err rc;

    if (n < 2)
        return REIN_OK;
    rc = rein_buf_adds(b, "\nTried so far:\n");
    for (size_t i = first; !rc && i < n; i++) {
        const json_t *it = json_array_get(history, i);
        rc = rein_buf_addf(b, "(%lld) %s → %s\n",
                           (long long)json_integer_value(json_object_get(it, "iteration")),
                           json_string_value(json_object_get(it, "summary")),
                           json_string_value(json_object_get(it, "verdict")));
    }
    return rc;
}

char *rein__loop_observation(const struct rein__loop_observation *o)
{
    struct rein_verify_protocol_info p;
    struct rein_buf b;
    rein_err rc;
    char *out;

    rein_buf_init(&b, OBSERVATION_MAX);
    rc = rein_buf_addf(
        &b, "Iteration %d of %d: the checks say %s.\n", o->iteration, o->max_iterations,
        o->judge && rein_verify_judge_result_verdict(o->judge) == REIN_VERIFY_JUDGE_FAIL
            ? "FAILED"
            : rein_verify_verdict_name(rein_verify_report_verdict(o->report)));
    for (size_t i = 0; !rc && rein_verify_report_protocol(o->report, i, &p); i++) {
        if (p.status == REIN_VERIFY_STATUS_FAILED)
            rc = add_failed(&b, o, &p);
    }
    if (!rc)
        rc = add_claims(&b, o->report);
    if (!rc)
        rc = add_judge(&b, o->judge);
    if (!rc)
        rc = add_others(&b, o->report);
    if (!rc)
        rc = add_tried(&b, o->history);
    if (!rc && o->extended)
        rc = rein_buf_addf(&b,
                           "\nThe last iterations made progress, so the limit is now %d "
                           "iterations.\n",
                           o->max_iterations);
    if (!rc)
        rc = rein_buf_adds(&b, "\nFix what failed, then answer with what you changed; the "
                               "checks run again after your answer.");
    if (rc == REIN_ETOOBIG) {
        /* Enormous claims or reasons: what fits is still the most useful part. */
        rein_buf_truncate(&b, OBSERVATION_MAX - 200);
        rc = rein_buf_adds(&b, "\n… (cut)\nFix what failed, then answer with what you changed.");
    }
    out = rc ? NULL : rein_buf_detach(&b, NULL);
    if (out)
        rein__verify_utf8_fix(out, strlen(out));
    rein_buf_release(&b);
    return out;
}

/* ---- reading the answer ---- */

bool rein__loop_blocked(const char *text, size_t len, char *why, size_t why_len)
{
    static const char *const marks[] = {"BLOCKED:", "BLOCKED -", "BLOCKED：", "阻塞：", "阻塞:"};
    const char *end = text + len;

    for (const char *line = text; line < end;) {
        const char *eol = memchr(line, '\n', (size_t)(end - line));
        const char *p = line;
        if (!eol)
            eol = end;
        while (p < eol && strchr(" \t*_>-#", *p) && *p)
            p++;
        for (size_t m = 0; m < REIN_ARRAY_SIZE(marks); m++) {
            size_t ml = strlen(marks[m]);
            if ((size_t)(eol - p) >= ml && memcmp(p, marks[m], ml) == 0) {
                const char *w = p + ml;
                size_t wl;
                while (w < eol && (*w == ' ' || *w == '*' || *w == '\t'))
                    w++;
                wl = (size_t)(eol - w);
                while (wl && (w[wl - 1] == '\r' || w[wl - 1] == ' ' || w[wl - 1] == '*'))
                    wl--;
                if (why && why_len) {
                    snprintf(why, why_len, "%.*s", (int)(wl < why_len ? wl : why_len - 1), w);
                    rein__verify_utf8_fix(why, strlen(why));
                }
                return true;
            }
        }
        line = eol + 1;
    }
    return false;
}

/* The first sentence (or line) of text, at most SAID_MAX bytes, into out. */
static void first_sentence(const char *text, char *out, size_t n)
{
    size_t len = 0;

    while (*text == ' ' || *text == '\n' || *text == '\t' || *text == '\r')
        text++;
    while (text[len] && text[len] != '\n' && len < SAID_MAX) {
        len++;
        if (text[len - 1] == '.' && (text[len] == ' ' || text[len] == '\0'))
            break;
    }
    snprintf(out, n, "%.*s%s", (int)len, text,
             text[len] && text[len] != '\n' && len >= SAID_MAX ? "…" : "");
    rein__verify_utf8_fix(out, strlen(out));
}

/* The argument that says what a call was about: a path, a command, a name. */
static const char *key_argument(const json_t *args)
{
    static const char *const keys[] = {"path",    "file", "filePath", "file_path", "filename",
                                       "command", "cmd",  "name",     "query",     NULL};

    for (size_t i = 0; keys[i]; i++) {
        const char *v = json_string_value(json_object_get(args, keys[i]));
        if (v)
            return v;
    }
    return NULL;
}

char *rein__loop_summary(const json_t *tool_calls, const char *answer)
{
    size_t n = json_array_size(tool_calls);
    char said[SAID_MAX * 2 + 8];
    struct rein_buf b;
    rein_err rc = REIN_OK;
    char *out;

    rein_buf_init(&b, 0);
    if (n == 0)
        rc = rein_buf_adds(&b, "no tool calls");
    for (size_t i = 0; !rc && i < n && i < SUMMARY_CALLS; i++) {
        const json_t *c = json_array_get(tool_calls, i);
        const char *tool = json_string_value(json_object_get(c, "tool"));
        const char *arg = key_argument(json_object_get(c, "arguments"));
        const char *status = json_string_value(json_object_get(c, "status"));
        const json_t *res = json_object_get(c, "result"), *err = json_object_get(res, "error");
        /* error.code of the normalized result; a bare error object {code, …} reads too. */
        const char *code =
            json_string_value(json_object_get(json_is_object(err) ? err : res, "code"));
        bool failed = status && strcmp(status, "success") != 0;

        if (failed && code)
            status = code; /* "denied" says more than "invalid" */
        rc = rein_buf_addf(&b, "%s%s%s%.60s%s%s", i ? ", " : "", tool ? tool : "?", arg ? " " : "",
                           arg ? arg : "", failed ? " " : "", failed ? status : "");
    }
    if (!rc && n > SUMMARY_CALLS)
        rc = rein_buf_addf(&b, " and %zu more call%s", n - SUMMARY_CALLS,
                           n - SUMMARY_CALLS == 1 ? "" : "s");
    first_sentence(answer ? answer : "", said, sizeof(said));
    if (!rc && said[0])
        rc = rein_buf_addf(&b, "; said \"%s\"", said);
    if (!rc && b.len > SUMMARY_MAX) {
        rein_buf_truncate(&b, SUMMARY_MAX);
        rein__verify_utf8_fix(b.ptr, b.len);
        rc = rein_buf_adds(&b, "…");
    }
    /* "%.60s" may have cut a character: repair before anyone reads it as UTF-8. */
    rein__verify_utf8_fix(b.ptr, b.len);
    out = rc ? NULL : rein_buf_detach(&b, NULL);
    rein_buf_release(&b);
    return out;
}

json_t *rein__loop_shorten(const json_t *value, size_t max)
{
    const char *key;
    json_t *v, *out;
    size_t i;

    if (json_is_string(value) && json_string_length(value) > max) {
        char *s = rein_asprintf("%.*s… (%zu bytes)", (int)max, json_string_value(value),
                                json_string_length(value));
        if (!s)
            return NULL;
        rein__verify_utf8_fix(s, strlen(s));
        out = json_string(s);
        rein_free(s);
        return out;
    }
    if (json_is_object(value)) {
        out = json_object();
        json_object_foreach((json_t *)value, key, v)
        {
            if (!out || json_object_set_new(out, key, rein__loop_shorten(v, max))) {
                json_decref(out);
                return NULL;
            }
        }
        return out;
    }
    if (json_is_array(value)) {
        out = json_array();
        json_array_foreach(value, i, v)
        {
            if (!out || json_array_append_new(out, rein__loop_shorten(v, max))) {
                json_decref(out);
                return NULL;
            }
        }
        return out;
    }
    return json_deep_copy(value);
}
