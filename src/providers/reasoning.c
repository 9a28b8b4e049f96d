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
    [REIN_REASONING_XHIGH] = {"xhigh", 32768},
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

bool rein__claude_thinking(const rein_provider *p, const rein_model_request *req,
                           const char *member, int64_t *budget, int64_t *max_tokens)
{
    *budget = rein__reasoning_budget(p, req, member);
    *max_tokens = req->max_tokens;
    if (*budget < 0)
        return false;
    if (*budget == 0)
        return true;
    if (req->max_tokens <= 0)
        *max_tokens = *budget + ANSWER_TOKENS;
    else if (*budget >= req->max_tokens && req->max_tokens > BUDGET_MIN)
        *budget = req->max_tokens - 1;
    return true;
}

void rein__jw_claude_thinking(struct rein_jw *jw, int64_t budget)
{
    if (budget == 0) {
        rein_jw_raw(jw, "{\"type\":\"disabled\"}", 19);
        return;
    }
    rein_jw_obj_begin(jw);
    rein_jw_key(jw, "type");
    rein_jw_str(jw, "enabled");
    rein_jw_key(jw, "budget_tokens");
    rein_jw_int(jw, budget);
    rein_jw_obj_end(jw);
}

void rein__jw_reasoning_effort(struct rein_jw *jw, const rein_provider *p,
                               const rein_model_request *req)
{
    enum rein_reasoning e = rein__reasoning_effort(p, req, "reasoning_effort");

    if (e == REIN_REASONING_UNSET)
        return;
    rein_jw_key(jw, "reasoning_effort");
    rein_jw_str(jw, efforts[e].word);
}
