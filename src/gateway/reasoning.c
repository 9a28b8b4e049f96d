/*
 * A client's reasoning ask for an upstream of another wire (decision 0095): OpenAI chat's
 * reasoning_effort, the Responses API's reasoning.effort, Anthropic's thinking budget and
 * Gemini's thinkingConfig become the neutral request's reasoning, which the upstream's wire
 * writes in its own words. Only for a model that takes a reasoning setting (its capabilities):
 * for any other the member stays dropped and named, as a model that cannot reason answers the
 * same request without it, where the upstream would refuse the member. Likewise a sampling
 * setting the upstream's model refuses (Claude from 4.7 on, or both of them from 4.1 on;
 * decision 0101) is left out and named rather than sent to a certain 400, and an output limit
 * above the model's own is lowered to it (decision 0103).
 */
#include "gateway_int.h"

#include <string.h>
#include <strings.h>

/* OpenAI's words; the Responses API's under reasoning.effort. */
static bool effort_ask(const json_t *word, enum rein_reasoning *effort)
{
    return json_is_string(word) && rein_reasoning_from_word(json_string_value(word), effort) == 0;
}

/* Anthropic's thinking: {"type": "enabled", "budget_tokens": N}, or {"type": "adaptive"} at the
 * effort of output_config (Claude 4.6 on; high, Claude's default, when it names none); an
 * effort without thinking asks it too. "disabled" is the default and asks nothing. */
static const char *thinking_ask(const json_t *pt, enum rein_reasoning *effort, int64_t *budget)
{
    const json_t *t = json_object_get(pt, "thinking");
    const json_t *b = json_object_get(t, "budget_tokens");
    const char *type = json_string_value(json_object_get(t, "type"));
    const json_t *word = json_object_get(json_object_get(pt, "output_config"), "effort");

    if (type && strcmp(type, "enabled") == 0 && json_is_integer(b) && json_integer_value(b) > 0) {
        *budget = json_integer_value(b);
        return "thinking";
    }
    if (type && strcmp(type, "adaptive") == 0) {
        if (!effort_ask(word, effort))
            *effort = REIN_REASONING_HIGH;
        return "thinking";
    }
    return effort_ask(word, effort) ? "output_config" : NULL;
}

/* Gemini's thinkingConfig: a thinkingBudget, or Gemini 3's thinkingLevel ("low", "HIGH", …).
 * A budget of 0 (no thinking) asks nothing: OpenAI's models disagree on a word for it ("none"
 * from GPT-5.1 on, "minimal" before), and -1 lets the model choose, as every wire's default
 * does. */
static bool gemini_ask(const json_t *gc, enum rein_reasoning *effort, int64_t *budget)
{
    const json_t *tc = rein__gw_gm_member(gc, "thinkingConfig");
    const json_t *b = rein__gw_gm_member(tc, "thinkingBudget");
    const json_t *level = rein__gw_gm_member(tc, "thinkingLevel");
    char word[16];

    if (json_is_integer(b)) {
        *budget = json_integer_value(b);
        return *budget > 0;
    }
    if (!json_is_string(level) || json_string_length(level) >= sizeof(word))
        return false;
    snprintf(word, sizeof(word), "%s", json_string_value(level));
    for (char *s = word; *s; s++)
        *s = (char)(*s >= 'A' && *s <= 'Z' ? *s - 'A' + 'a' : *s);
    return rein_reasoning_from_word(word, effort) == 0;
}

const char *rein__gw_reasoning_ask(const struct rein__gw_wire *wire, const json_t *passthrough,
                                   enum rein_reasoning *effort, int64_t *budget)
{
    const json_t *pt = passthrough;
    const char *name;
    bool asked;

    *effort = REIN_REASONING_UNSET;
    *budget = 0;
    if (wire == &rein__gw_anthropic) {
        name = thinking_ask(pt, effort, budget);
        asked = name != NULL;
    } else if (wire == &rein__gw_gemini) {
        name = "generationConfig.thinkingConfig";
        asked = gemini_ask(json_object_get(pt, "generationConfig"), effort, budget);
    } else if (wire == &rein__gw_responses) {
        name = "reasoning";
        asked = effort_ask(json_object_get(json_object_get(pt, name), "effort"), effort);
    } else {
        name = "reasoning_effort";
        asked = effort_ask(json_object_get(pt, name), effort);
    }
    return asked ? name : NULL;
}

void rein__gw_reasoning(struct rein__gw_ctx *c)
{
    enum rein_reasoning effort;
    int64_t budget;
    const char *name = rein__gw_reasoning_ask(c->wire, c->req.passthrough, &effort, &budget);
    const char *model = c->g->model_from_client ? c->req.model : NULL;
    struct rein_model_caps caps;

    if (!name || !rein_provider_writes_reasoning(c->g->provider, model))
        return;
    rein_provider_model_caps(c->g->provider, model, &caps);
    if (!caps.reasoning)
        return;
    rein_model_request_set_reasoning(c->mreq, effort, budget);
    c->reasoning_name = name;
    rein__gw_unlist(c->req.dropped, name);
    if (c->wire == &rein__gw_anthropic) /* thinking at output_config's effort: both taken */
        rein__gw_unlist(c->req.dropped, "output_config");
}

/* A sampling setting the upstream's model refuses: left out and named as the client wrote it. */
static rein_err unsample(struct rein__gw_ctx *c, bool top_p)
{
    bool gemini = c->wire == &rein__gw_gemini;

    if (top_p)
        rein_model_request_set_top_p(c->mreq, -1);
    else
        rein_model_request_set_temperature(c->mreq, -1);
    return json_array_append_new(
               c->req.dropped,
               json_string(top_p ? (gemini ? "generationConfig.topP" : "top_p")
                                 : (gemini ? "generationConfig.temperature" : "temperature")))
               ? REIN_ENOMEM
               : REIN_OK;
}

rein_err rein__gw_fit(struct rein__gw_ctx *c)
{
    const char *model = c->g->model_from_client ? c->req.model : NULL;
    struct rein_model_caps caps;
    /* the request as it goes up: its model, and the reasoning rein__gw_reasoning gave it */
    unsigned takes = rein_provider_sampling(c->g->provider, c->mreq);
    bool t = c->req.temperature >= 0, p = c->req.top_p >= 0;

    rein_err rc = REIN_OK;

    if (t && !(takes & REIN_SAMPLING_TEMPERATURE)) {
        rc = unsample(c, false);
        t = false;
    }
    /* one of the two: the temperature, the one Anthropic tells people to tune */
    if (!rc && p && (!(takes & REIN_SAMPLING_TOP_P) || (t && !(takes & REIN_SAMPLING_BOTH))))
        rc = unsample(c, true);
    /* an output limit above the model's is the model's (decision 0103): Claude Code's 32,000
     * to GPT-4o, which answers 400 to it */
    rein_provider_model_caps(c->g->provider, model, &caps);
    if (caps.max_output > 0 && c->req.max_tokens > caps.max_output)
        rein_model_request_set_max_tokens(c->mreq, caps.max_output);
    return rc;
}
