/*
 * The plan verifier (000_47403d59ab6ffe48.txt, "Verifier"): pure C, no model. A step passes
 * when its current attempt made no calls or none of them is still pending; a pending call is
 * one that was issued and never answered, a lost or hallucinated call.
 *
 * On top of the seed's rule it reads the step's final text for claims its ledger does not
 * back: a tool named in an affirmative sentence ("I saved it with write_file") with no
 * successful call of that tool in this attempt, and a file the text says was created,
 * modified or deleted by the step itself (extracted by the verify module's claim extractor;
 * "I", "we" or a sentence that starts with the verb) that no successful call of a tool that
 * may write touched. Sentences that are negated, conditional, future or
 * about a failure ("write_file failed", "I could not call write_file", "I will write
 * notes.txt") claim nothing, so an honest report of a failure never fails the step.
 */
#include "plan_int.h"

#include <ctype.h>
#include <rein/verify.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define REASON_MAX   600
#define SENTENCE_MAX 300

static bool word_char(unsigned char c)
{
    return isalnum(c) || c == '_' || c >= 0x80;
}

/* Bytes of a sentence terminator at p (0 when none): ". ", "!", "?", ";", a newline, or the
 * CJK full stops. A '.' inside a word ("notes.txt") ends nothing. */
static size_t terminator(const char *p)
{
    unsigned char c = (unsigned char)p[0];

    if (c == '\n')
        return 1;
    if (c == '.' || c == '!' || c == '?' || c == ';')
        return p[1] == '\0' || isspace((unsigned char)p[1]) ? 1 : 0;
    if (strncmp(p, "。", 3) == 0 || strncmp(p, "！", 3) == 0 || strncmp(p, "？", 3) == 0 ||
        strncmp(p, "；", 3) == 0)
        return 3;
    return 0;
}

/* The sentence around text[at] as [*from, *to). */
static void sentence_bounds(const char *text, size_t at, size_t *from, size_t *to)
{
    size_t a = 0, b = at;

    for (size_t k = 0; k < at;) {
        size_t t = terminator(text + k);
        if (t) {
            k += t;
            a = k;
        } else {
            k++;
        }
    }
    while (text[b] && !terminator(text + b))
        b++;
    if (text[b])
        b += terminator(text + b);
    while (isspace((unsigned char)text[a]))
        a++;
    *from = a;
    *to = b;
}

/* True when the sentence (len bytes) claims nothing: negated, conditional, future, about a
 * failure, or a question. */
static bool hedged(const char *s, size_t len)
{
    static const char *const words[] = {
        "not",    "never",   "no",      "cannot",    "unable", "failed", "fail",
        "fails",  "failing", "without", "if",        "unless", "will",   "would",
        "should", "could",   "might",   "may",       "going",  "need",   "needs",
        "try",    "tried",   "attempt", "attempted", "error",  "errors"};
    static const char *const cjk[] = {"没",   "沒",   "未",   "不",   "无法", "無法", "失败",
                                      "失敗", "将",   "將",   "会",   "會",   "如果", "需要",
                                      "应该", "應該", "打算", "尝试", "嘗試", "错误", "錯誤"};
    size_t k = 0;

    while (len > 0 && isspace((unsigned char)s[len - 1]))
        len--;
    if (len > 0 && s[len - 1] == '?')
        return true;
    if (len >= 3 && strncmp(s + len - 3, "？", 3) == 0)
        return true;
    for (size_t c = 0; c < sizeof(cjk) / sizeof(cjk[0]); c++) {
        size_t cl = strlen(cjk[c]);
        for (size_t q = 0; q + cl <= len; q++) {
            if (memcmp(s + q, cjk[c], cl) == 0)
                return true;
        }
    }
    while (k < len) {
        char word[24];
        size_t wl = 0;
        while (k < len && !isalpha((unsigned char)s[k]))
            k++;
        /* A word, with ' or ’ inside it ("didn't", "didn’t" both end in "n't" here). */
        while (k < len) {
            char c = s[k];
            if (k + 3 <= len && strncmp(s + k, "’", 3) == 0) {
                c = '\'';
                k += 2;
            } else if (!isalpha((unsigned char)c) && c != '\'') {
                break;
            }
            if (wl + 1 < sizeof(word))
                word[wl++] = (char)tolower((unsigned char)c);
            k++;
        }
        word[wl] = '\0';
        if (wl == 0)
            continue;
        if (wl >= 3 && strcmp(word + wl - 3, "n't") == 0)
            return true;
        for (size_t w = 0; w < sizeof(words) / sizeof(words[0]); w++) {
            if (strcmp(word, words[w]) == 0)
                return true;
        }
    }
    return false;
}

/* True when name is an ordinary word ("echo", "read") that the text may use without meaning
 * the tool; such names count only in backticks or next to "tool", "called", "using", … */
static bool plain_word(const char *name)
{
    for (const char *c = name; *c; c++) {
        if (!islower((unsigned char)*c))
            return false;
    }
    return true;
}

static void word_before(const char *text, size_t at, char *out, size_t size)
{
    size_t e = at, b;

    while (e > 0 && (text[e - 1] == ' ' || text[e - 1] == '\t'))
        e--;
    b = e;
    while (b > 0 && isalpha((unsigned char)text[b - 1]))
        b--;
    snprintf(out, size, "%.*s", (int)(e - b), text + b);
}

static void word_after(const char *text, size_t at, char *out, size_t size)
{
    size_t b = at, e;

    while (text[b] == ' ' || text[b] == '\t')
        b++;
    e = b;
    while (text[e] && isalpha((unsigned char)text[e]))
        e++;
    snprintf(out, size, "%.*s", (int)(e - b), text + b);
}

static bool tool_context(const char *text, size_t at, size_t len)
{
    static const char *const before[] = {"called", "call",    "calling", "ran",    "run",
                                         "used",   "using",   "invoked", "invoke", "via",
                                         "tool",   "through", "with"};
    static const char *const after[] = {"tool", "function", "skill", "call"};
    char w[24];

    if (at > 0 && text[at - 1] == '`' && text[at + len] == '`')
        return true;
    word_before(text, at, w, sizeof(w));
    for (size_t k = 0; k < sizeof(before) / sizeof(before[0]); k++) {
        if (strcasecmp(w, before[k]) == 0)
            return true;
    }
    word_after(text, at + len, w, sizeof(w));
    for (size_t k = 0; k < sizeof(after) / sizeof(after[0]); k++) {
        if (strcasecmp(w, after[k]) == 0)
            return true;
    }
    return false;
}

/* The first affirmative sentence of text that names tool, as [*from, *to); false if none. */
static bool names_tool(const char *text, const char *tool, size_t *from, size_t *to)
{
    size_t len = strlen(tool), tl = strlen(text);
    bool plain = plain_word(tool);

    if (len == 0)
        return false;
    for (size_t at = 0; at + len <= tl; at++) {
        if (strncasecmp(text + at, tool, len) != 0)
            continue;
        if ((at > 0 && word_char((unsigned char)text[at - 1])) ||
            word_char((unsigned char)text[at + len]))
            continue;
        if (plain && !tool_context(text, at, len))
            continue;
        sentence_bounds(text, at, from, to);
        if (!hedged(text + *from, *to - *from))
            return true;
    }
    return false;
}

/* ---- the ledger side ---- */

struct view {
    const struct rein__plan_step *s;
    json_t *pending, *failed, *claims;
    const rein_registry *reg;
};

static bool status_is(const json_t *e, const char *status)
{
    const char *st = json_string_value(json_object_get(e, "status"));
    return st && strcmp(st, status) == 0;
}

static bool tool_succeeded(const struct view *v, const char *tool)
{
    size_t k;
    json_t *e;

    json_array_foreach(v->s->history, k, e)
    {
        const char *t = json_string_value(json_object_get(e, "tool"));
        if (rein__plan_entry_current(v->s, e) && status_is(e, "success") && t &&
            strcasecmp(t, tool) == 0)
            return true;
    }
    return false;
}

/* True when a successful call of a tool that may write mentions path in its arguments or
 * result. */
static bool path_touched(const struct view *v, const char *path)
{
    const char *base = strrchr(path, '/');
    size_t k;
    json_t *e;

    base = base && base[1] ? base + 1 : path;
    json_array_foreach(v->s->history, k, e)
    {
        const char *t = json_string_value(json_object_get(e, "tool"));
        const rein_tool *tool = v->reg && t ? rein_registry_get(v->reg, t) : NULL;
        char *args, *result;
        bool hit;
        if (!rein__plan_entry_current(v->s, e) || !status_is(e, "success"))
            continue;
        if (tool && rein_tool_is_read_only(tool))
            continue;
        /* A loaded entry may lack either member. */
        args = json_object_get(e, "args") ? rein_json_dumps(json_object_get(e, "args")) : NULL;
        result =
            json_object_get(e, "result") ? rein_json_dumps(json_object_get(e, "result")) : NULL;
        hit = (args && (strstr(args, path) || strstr(args, base))) ||
              (result && (strstr(result, path) || strstr(result, base)));
        rein_free(args);
        rein_free(result);
        if (hit)
            return true;
    }
    return false;
}

static void add_claim(struct view *v, const char *text, size_t len, const char *what,
                      const char *value, const char *reason)
{
    json_t *c = json_pack("{s:s%, s:s, s:s}", "text", text, len < SENTENCE_MAX ? len : SENTENCE_MAX,
                          what, value, "reason", reason);

    if (!c || json_array_append_new(v->claims, c))
        (void)json_array_append_new(v->claims, json_string(reason)); /* still counts */
}

static void check_tools(struct view *v, const char *text, const char *const *tools, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        size_t from, to;
        char reason[200];
        if (!tools[k] || !names_tool(text, tools[k], &from, &to) || tool_succeeded(v, tools[k]))
            continue;
        snprintf(reason, sizeof(reason),
                 "the text names %s as done, but no call to %s succeeded in this attempt", tools[k],
                 tools[k]);
        add_claim(v, text + from, to - from, "tool", tools[k], reason);
    }
}

/*
 * True when the sentence says the agent did it: a first-person word ("I", "we", "my", 我), or
 * a summary that starts with the verb ("Created notes.txt."). "The log says config.yaml was
 * modified yesterday" reports a fact the step found, not something it did.
 */
static bool agentive(const char *s)
{
    static const char *const persons[] = {"i", "i've", "i'd", "i'm", "we", "we've", "my", "our"};
    static const char *const verbs[] = {"created",   "wrote",   "written", "saved",   "updated",
                                        "modified",  "edited",  "deleted", "removed", "added",
                                        "generated", "changed", "fixed",   "rewrote"};
    bool first = true;

    if (strstr(s, "我"))
        return true;
    for (const char *p = s; *p;) {
        char word[16];
        size_t n = 0;
        while (*p && !isalpha((unsigned char)*p))
            p++;
        while (*p && (isalpha((unsigned char)*p) || *p == '\'')) {
            if (n + 1 < sizeof(word))
                word[n++] = (char)tolower((unsigned char)*p);
            p++;
        }
        word[n] = '\0';
        if (n == 0)
            break;
        for (size_t k = 0; k < sizeof(persons) / sizeof(persons[0]); k++) {
            if (strcmp(word, persons[k]) == 0)
                return true;
        }
        for (size_t k = 0; first && k < sizeof(verbs) / sizeof(verbs[0]); k++) {
            if (strcmp(word, verbs[k]) == 0)
                return true;
        }
        first = false;
    }
    return false;
}

static rein_err check_files(struct view *v, const char *text)
{
    rein_error err;
    rein_verify_claims *claims = rein_verify_claims_extract(text, strlen(text), &err);

    if (!claims)
        return err.code ? err.code : REIN_ENOMEM;
    for (size_t k = 0; k < rein_verify_claims_count(claims); k++) {
        const struct rein_verify_claim *c = rein_verify_claims_get(claims, k);
        char reason[300];
        if (!c->path || (c->kind != REIN_VERIFY_CLAIM_FILE_CREATED &&
                         c->kind != REIN_VERIFY_CLAIM_FILE_MODIFIED &&
                         c->kind != REIN_VERIFY_CLAIM_FILE_DELETED))
            continue;
        if (!agentive(c->text) || path_touched(v, c->path))
            continue;
        snprintf(reason, sizeof(reason),
                 "the text says %.120s was %s, but no successful call in this attempt touched it",
                 c->path,
                 c->kind == REIN_VERIFY_CLAIM_FILE_CREATED    ? "created"
                 : c->kind == REIN_VERIFY_CLAIM_FILE_MODIFIED ? "modified"
                                                              : "deleted");
        add_claim(v, c->text, strlen(c->text), "path", c->path, reason);
    }
    rein_verify_claims_free(claims);
    return REIN_OK;
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
        size_t total = 0, k;
        json_t *e;
        json_array_foreach(v->s->history, k, e) total += rein__plan_entry_current(v->s, e);
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
            const char *r = json_string_value(json_object_get(c, "reason"));
            rein__plan_text_addf(&b, "%sthe step's answer claims what its calls do not show: %s%s",
                                 np ? "; " : "", r ? r : json_string_value(c),
                                 nc > 1 ? " (and more)" : "");
        }
    }
    return rein__plan_text_detach(&b);
}

bool rein_plan_verify_step(const rein_plan *p, size_t i, const char *text, const rein_registry *reg,
                           const char *const *tools, size_t n, json_t **report)
{
    struct view v = {.reg = reg};
    const char **names = NULL;
    bool passed, oom = false;
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
    oom = !v.pending || !v.failed || !v.claims;
    json_array_foreach(v.s->history, k, e)
    {
        if (oom || !rein__plan_entry_current(v.s, e))
            continue;
        if (status_is(e, "pending"))
            oom = json_array_append(v.pending, e) != 0;
        else if (status_is(e, "error") || status_is(e, "invalid"))
            oom = json_array_append(v.failed, e) != 0;
    }
    if (!oom && text && text[0]) {
        if (!tools && reg) {
            n = rein_registry_count(reg);
            names = rein_calloc(n ? n : 1, sizeof(*names));
            oom = !names;
            for (size_t t = 0; names && t < n; t++)
                names[t] = rein_tool_id(rein_registry_at(reg, t));
            tools = names;
        }
        if (!oom && tools)
            check_tools(&v, text, tools, n);
        if (!oom && check_files(&v, text) != REIN_OK)
            oom = true;
    }
    passed = !oom && json_array_size(v.pending) == 0 && json_array_size(v.claims) == 0;
    reason = reason_text(&v, oom);
    if (report) {
        *report = json_pack("{s:b, s:s, s:O, s:O, s:O}", "passed", passed, "reason",
                            reason ? reason : "out of memory", "pending", v.pending, "failed_calls",
                            v.failed, "claims", v.claims);
    }
    rein_free(reason);
    rein_free(names);
    json_decref(v.pending);
    json_decref(v.failed);
    json_decref(v.claims);
    return passed;
}
