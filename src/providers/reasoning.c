/*
 * How much a reasoning model thinks (decision 0095): the one table between OpenAI's effort
 * words and the thinking budgets of Anthropic and Gemini, and the request's setting as each
 * kind of wire reads it. The wires write their own members (openai.c, responses.c,
 * anthropic.c, gemini.c).
 */
#include "provider_int.h"

#include <string.h>

static const struct {
    const char *word;
    int64_t budget; /* thinking tokens a budget wire gets for the word */
} efforts[] = {
    [REIN_REASONING_UNSET] = {NULL, 0},           [REIN_REASONING_NONE] = {"none", 0},
    [REIN_REASONING_MINIMAL] = {"minimal", 1024}, [REIN_REASONING_LOW] = {"low", 1024},
    [REIN_REASONING_MEDIUM] = {"medium", 8192},   [REIN_REASONING_HIGH] = {"high", 24576},
    [REIN_REASONING_XHIGH] = {"xhigh", 32768},    [REIN_REASONING_MAX] = {"max", 32768},
};

/* Anthropic's least budget, which Gemini takes too. */
#define BUDGET_MIN 1024

const char *rein_reasoning_word(enum rein_reasoning effort)
{
    return (size_t)effort < REIN_ARRAY_SIZE(efforts) ? efforts[effort].word : NULL;
}

rein_err rein_reasoning_from_word(const char *word, enum rein_reasoning *out)
{
    for (size_t i = 1; word && i < REIN_ARRAY_SIZE(efforts); i++) {
        if (strcmp(word, efforts[i].word) == 0) {
            *out = (enum rein_reasoning)i;
            return REIN_OK;
        }
    }
    return REIN_EINVAL;
}

void rein_model_request_set_reasoning(rein_model_request *req, enum rein_reasoning effort,
                                      int64_t budget_tokens)
{
    req->reasoning = (size_t)effort < REIN_ARRAY_SIZE(efforts) ? effort : REIN_REASONING_UNSET;
    req->reasoning_budget = budget_tokens > 0 ? budget_tokens : 0;
}

/* Whether the caller's extra members already say it in the wire's own words. */
static bool extra_says(const rein_model_request *req, const char *member)
{
    const json_t *gc;

    if (!req->extra)
        return false;
    if (strcmp(member, "thinkingConfig") != 0)
        return json_object_get(req->extra, member) != NULL;
    gc = json_object_get(req->extra, "generationConfig");
    return json_object_get(gc, "thinkingConfig") || json_object_get(gc, "thinking_config");
}

enum rein_reasoning rein__reasoning_effort(const rein_provider *p, const rein_model_request *req,
                                           const char *member)
{
    int64_t b = req->reasoning_budget;

    if (extra_says(req, member))
        return REIN_REASONING_UNSET;
    if (req->reasoning != REIN_REASONING_UNSET)
        return req->reasoning;
    if (b > 0)
        return b <= efforts[REIN_REASONING_LOW].budget      ? REIN_REASONING_LOW
               : b <= efforts[REIN_REASONING_MEDIUM].budget ? REIN_REASONING_MEDIUM
                                                            : REIN_REASONING_HIGH;
    return p->cfg.reasoning;
}

int64_t rein__reasoning_budget(const rein_provider *p, const rein_model_request *req,
                               const char *member)
{
    enum rein_reasoning e;

    if (extra_says(req, member))
        return -1;
    if (req->reasoning == REIN_REASONING_NONE)
        return 0;
    if (req->reasoning_budget > 0)
        return req->reasoning_budget > BUDGET_MIN ? req->reasoning_budget : BUDGET_MIN;
    e = req->reasoning != REIN_REASONING_UNSET ? req->reasoning : p->cfg.reasoning;
    return e == REIN_REASONING_UNSET ? -1 : efforts[e].budget;
}

/* The answer's room beside the thinking when the request sets no output limit. */
#define ANSWER_TOKENS 4096
/* The most rein asks of Claude unasked (rein__claude_default_max_tokens). */
#define CLAUDE_DEFAULT_MAX 32000

/* Bedrock's ids carry the family after a region and provider ("us.anthropic.claude-opus-4-6-v1"
 * is 46); a date (more than two digits) is not a version. */
int rein__claude_version(const char *model, bool *newest_family)
{
    const char *s = model ? strstr(model, "claude-") : NULL;
    int v = 0, parts = 0;

    *newest_family = false;
    if (!s)
        return 0;
    s += strlen("claude-");
    while (*s && parts < 2) {
        size_t n = strspn(s, "0123456789");
        size_t word = n ? n : strcspn(s, "-.:@_");
        if (n && n <= 2 && (s[n] == '\0' || strchr("-.:@_", s[n]))) {
            int d = n == 2 ? 10 * (s[0] - '0') + (s[1] - '0') : s[0] - '0';
            v = parts ? v + d : 10 * d;
            parts++;
        } else if (parts) {
            break; /* the minor must follow the major */
        } else if (n == 0 && (strncmp(s, "mythos", word) == 0 || strncmp(s, "fable", word) == 0) &&
                   word >= 5) {
            *newest_family = true;
        }
        s += word;
        s += strspn(s, "-.:@_");
    }
    return v;
}

void rein__claude_form(const char *model, struct rein__claude_form *f)
{
    bool newest;
    int v = rein__claude_version(model, &newest);
    /* Mythos and Fable came after adaptive thinking; their previews carry no number */
    bool preview = v == 0 && newest;

    if (preview)
        v = 47;
    f->adaptive = v >= 46;
    f->adaptive_only = v >= 47;
    f->max = v >= 46;
    f->xhigh = v >= 47 && !preview;
}

unsigned rein__claude_sampling(const char *model, bool thinks)
{
    bool newest;
    int v = rein__claude_version(model, &newest);

    if (thinks || v >= 47 || (v == 0 && newest))
        return 0;
    if (v >= 41)
        return REIN_SAMPLING_TEMPERATURE | REIN_SAMPLING_TOP_P;
    return REIN_SAMPLING_TEMPERATURE | REIN_SAMPLING_TOP_P | REIN_SAMPLING_BOTH;
}

void rein__openai_model(const char *model, struct rein__openai_model *m)
{
    const char *n = model && strrchr(model, '/') ? strrchr(model, '/') + 1 : model;

    memset(m, 0, sizeof(*m));
    m->name = n ? n : "";
    n = m->name;
    m->o_series = n[0] == 'o' && n[1] >= '1' && n[1] <= '9';
    m->reasons = m->o_series ||
                 (strncmp(n, "gpt-5", 5) == 0 && strncmp(n, "gpt-5-chat", 10) != 0) ||
                 strncmp(n, "codex", 5) == 0;
    if (strncmp(n, "gpt-5", 5) != 0 || (n[5] != '\0' && n[5] != '-' && n[5] != '.'))
        m->gpt5 = -1;
    else
        m->gpt5 = n[5] == '.' && n[6] >= '1' && n[6] <= '9' ? n[6] - '0' : 0;
}

unsigned rein__openai_sampling(const char *model, bool thinks)
{
    struct rein__openai_model m;

    rein__openai_model(model, &m);
    /* GPT-5.1 on: sampling while the effort is none, their default */
    if (m.gpt5 >= 1)
        return thinks ? 0 : REIN_SAMPLING_ALL;
    return m.reasons ? 0 : REIN_SAMPLING_ALL;
}

bool rein__request_thinks(const rein_provider *p, const rein_model_request *req)
{
    enum rein_reasoning e = req->reasoning;

    if (e == REIN_REASONING_UNSET && req->reasoning_budget > 0)
        return true;
    if (e == REIN_REASONING_UNSET)
        e = p->cfg.reasoning;
    return e != REIN_REASONING_UNSET && e != REIN_REASONING_NONE;
}

/* Claude's effort word for e on a model of form f: minimal is its low, and a level the model
 * lacks is its high, as Anthropic's own clients fall back. */
static const char *claude_effort(enum rein_reasoning e, const struct rein__claude_form *f)
{
    if (e == REIN_REASONING_MINIMAL)
        return "low";
    if ((e == REIN_REASONING_XHIGH && !f->xhigh) || (e == REIN_REASONING_MAX && !f->max))
        return "high";
    return efforts[e].word;
}

/* The unasked limit for a model of output limit most (0: not known). */
static int64_t claude_default_max(int64_t most)
{
    if (most <= 0)
        return ANSWER_TOKENS;
    return most < CLAUDE_DEFAULT_MAX ? most : CLAUDE_DEFAULT_MAX;
}

int64_t rein__claude_default_max_tokens(const rein_provider *p, const rein_model_request *req)
{
    struct rein_model_caps caps;

    rein__caps_resolve(&p->cfg, rein__request_model(p, req), &caps);
    return claude_default_max(caps.max_output);
}

/* The output limit of a thinking request that set none: the thinking's room and an answer's,
 * and no less than an answer alone gets, within the model's limit, which counts the thinking;
 * a budget that no longer fits there leaves the answer its room. */
static void claude_think_limit(const rein_provider *p, const rein_model_request *req,
                               int64_t thinking, struct rein__claude_think *t)
{
    struct rein_model_caps caps;
    int64_t want = thinking + ANSWER_TOKENS;

    rein__caps_resolve(&p->cfg, rein__request_model(p, req), &caps);
    if (want < claude_default_max(caps.max_output))
        want = claude_default_max(caps.max_output);
    if (caps.max_output > 0 && want > caps.max_output)
        want = caps.max_output;
    t->max_tokens = want;
    if (t->budget > 0 && t->budget + ANSWER_TOKENS > want)
        t->budget = want - ANSWER_TOKENS > BUDGET_MIN ? want - ANSWER_TOKENS : BUDGET_MIN;
}

bool rein__claude_thinking(const rein_provider *p, const rein_model_request *req,
                           const char *member, struct rein__claude_think *t)
{
    struct rein__claude_form f;
    enum rein_reasoning e;

    memset(t, 0, sizeof(*t));
    t->max_tokens = req->max_tokens;
    rein__claude_form(rein__request_model(p, req), &f);
    if (!f.adaptive) {
        t->budget = rein__reasoning_budget(p, req, member);
        if (t->budget < 0)
            return false;
        t->type = t->budget ? "enabled" : "disabled";
        if (t->budget == 0)
            return true;
        if (req->max_tokens <= 0)
            claude_think_limit(p, req, t->budget, t);
        else if (t->budget >= req->max_tokens && req->max_tokens > BUDGET_MIN)
            t->budget = req->max_tokens - 1;
        return true;
    }
    e = rein__reasoning_effort(p, req, member);
    if (e == REIN_REASONING_UNSET)
        return false;
    if (e == REIN_REASONING_NONE) {
        /* Claude 4.7 on refuses "disabled": not thinking is the default it keeps */
        t->type = f.adaptive_only ? NULL : "disabled";
        return t->type != NULL;
    }
    t->type = "adaptive";
    if (!extra_says(req, "output_config"))
        t->effort = claude_effort(e, &f);
    if (req->max_tokens <= 0)
        claude_think_limit(p, req, efforts[e].budget, t);
    return true;
}

void rein__jw_claude_thinking(struct rein_jw *jw, const struct rein__claude_think *t)
{
    rein_jw_key(jw, "thinking");
    rein_jw_obj_begin(jw);
    rein_jw_key(jw, "type");
    rein_jw_str(jw, t->type);
    if (t->budget > 0) {
        rein_jw_key(jw, "budget_tokens");
        rein_jw_int(jw, t->budget);
    }
    rein_jw_obj_end(jw);
    if (t->effort) {
        rein_jw_key(jw, "output_config");
        rein_jw_obj_begin(jw);
        rein_jw_key(jw, "effort");
        rein_jw_str(jw, t->effort);
        rein_jw_obj_end(jw);
    }
}

/* Kimi has no effort words (it ignores reasoning_effort): from K2.5 on thinking is on unless
 * {"type": "disabled"} says otherwise, and a model named for thinking cannot turn it off. */
static void jw_kimi_thinking(struct rein_jw *jw, const rein_provider *p,
                             const rein_model_request *req)
{
    const char *model = rein__request_model(p, req);

    if (rein__reasoning_effort(p, req, "thinking") != REIN_REASONING_NONE ||
        (model && strstr(model, "thinking")))
        return;
    rein_jw_key(jw, "thinking");
    rein_jw_raw(jw, "{\"type\":\"disabled\"}", 19);
}

void rein__jw_reasoning_effort(struct rein_jw *jw, const rein_provider *p,
                               const rein_model_request *req)
{
    enum rein_reasoning e;

    if (p->cfg.quirks & Q_KIMI) {
        jw_kimi_thinking(jw, p, req);
        return;
    }
    e = rein__reasoning_effort(p, req, "reasoning_effort");
    if (e == REIN_REASONING_UNSET)
        return;
    rein_jw_key(jw, "reasoning_effort");
    rein_jw_str(jw, rein__openai_effort(e, rein__request_model(p, req)));
}

const char *rein__openai_effort(enum rein_reasoning e, const char *model)
{
    struct rein__openai_model m;
    bool xhigh;

    rein__openai_model(model, &m);
    /* xhigh from GPT-5.2 on and on 5.1's codex-max; none from 5.1 on; minimal on 5.0 only */
    xhigh = m.gpt5 >= 2 || (m.gpt5 == 1 && strstr(m.name, "codex-max"));
    if (e == REIN_REASONING_MAX)
        e = REIN_REASONING_XHIGH; /* Claude's max is above every OpenAI word */
    if (m.gpt5 < 0 && !m.o_series)
        return efforts[e].word; /* another server's model: the word as asked */
    if (e == REIN_REASONING_XHIGH && !xhigh)
        e = REIN_REASONING_HIGH;
    if (e == REIN_REASONING_NONE && (m.o_series || m.gpt5 == 0))
        e = m.o_series ? REIN_REASONING_LOW : REIN_REASONING_MINIMAL;
    if (e == REIN_REASONING_MINIMAL && (m.o_series || m.gpt5 >= 1))
        e = REIN_REASONING_LOW;
    return efforts[e].word;
}
