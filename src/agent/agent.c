/*
 * The agent handle (include/rein/agent.h): the provider and registry a turn uses, the pool its
 * parallel calls run on, the optional rules fast path and verifier, and the system prompt.
 *
 * The system prompt is rein's own words for what docs/DESIGN.md [pipeline] asks of it: read a
 * failed call's result, fix exactly what it names and call again, and never repeat a call
 * unchanged. When the model's capability table says it can state a confidence, the prompt
 * also asks for a "confidence:" line before tool calls, which the verification strategy reads
 * (docs/DESIGN.md [react]). Every conversation the agent starts shares one copy of it (the
 * message, a reference in each history).
 */
#include "agent_int.h"

#include <string.h>
#include <strings.h>

#define DEFAULT_POOL_THREADS 4
#define DEFAULT_MAX_PARALLEL 8

static const char default_role[] =
    "You are a helpful assistant that can call tools. Use a tool when it helps to answer the "
    "user, and answer directly when it does not.";

static const char tool_section[] =
    "\n\n## Tool results and errors\n"
    "Each tool result is a JSON object. A successful call has \"ok\": true and its "
    "\"output\". When a call cannot run or fails, the result says why: \"error\" explains the "
    "problem, \"errors\" lists each problem with the JSON Pointer \"path\" of the argument it "
    "concerns, \"expected\" is the tool's parameter schema, \"available_tools\" lists the "
    "exact tool names when the name was wrong, and \"hint\" says what to do next.\n"
    "When a call fails because of its arguments or its name:\n"
    "1. Read the error and find what it names: a missing field, a wrong type or value, an "
    "unknown name.\n"
    "2. Fix exactly that: add the missing field, correct the value, or use one of the "
    "available tool names as written.\n"
    "3. Call the tool again with the fixed arguments. Do not give up after one failed "
    "call.\n"
    "Never repeat a call unchanged: if the same call fails the same way twice, change your "
    "approach or ask the user. If a result has a \"warning\", follow it. Do not say a tool "
    "ran, or what it returned, unless its result is in this conversation.";

static const char confidence_section[] =
    "\n\nBefore you call tools, write one line \"confidence: N\", where N from 0 to 1 is how "
    "sure you are that the calls are right and are what the user wants.";

/* ---- names ---- */

#define NAME(id, name) name,
static const char *const mode_names[] = {REIN_AGENT_MODE_MAP(NAME)};
static const char *const verification_names[] = {REIN_AGENT_VERIFY_MAP(NAME)};
static const char *const stop_names[] = {REIN_AGENT_STOP_MAP(NAME)};
static const char *const state_names[] = {REIN_AGENT_STATE_MAP(NAME)};
#undef NAME

#define NAME_OF(table, v) ((size_t)(v) < REIN_ARRAY_SIZE(table) ? (table)[(size_t)(v)] : "unknown")

const char *rein_agent_mode_name(enum rein_agent_mode mode)
{
    return NAME_OF(mode_names, mode);
}

bool rein_agent_mode_parse(const char *text, enum rein_agent_mode *out)
{
    for (size_t i = 0; text && i < REIN_ARRAY_SIZE(mode_names); i++) {
        if (strcasecmp(text, mode_names[i]) == 0) {
            *out = (enum rein_agent_mode)i;
            return true;
        }
    }
    return false;
}

const char *rein_agent_verification_name(enum rein_agent_verification v)
{
    return NAME_OF(verification_names, v);
}

bool rein_agent_verification_parse(const char *text, enum rein_agent_verification *out)
{
    for (size_t i = 0; text && i < REIN_ARRAY_SIZE(verification_names); i++) {
        if (strcasecmp(text, verification_names[i]) == 0) {
            *out = (enum rein_agent_verification)i;
            return true;
        }
    }
    return false;
}

const char *rein_agent_stop_name(enum rein_agent_stop stop)
{
    return NAME_OF(stop_names, stop);
}

const char *rein_agent_state_name(enum rein_agent_state state)
{
    return NAME_OF(state_names, state);
}

/* ---- the handle ---- */

static rein_err build_prompt(rein_agent *a)
{
    char *p = rein_asprintf("%s%s%s", a->role ? a->role : default_role, tool_section,
                            a->caps.confidence ? confidence_section : "");

    json_t *msg = p ? json_pack("{s:s, s:s}", "role", "system", "content", p) : NULL;

    if (!msg) {
        rein_free(p);
        return REIN_ENOMEM;
    }
    rein_free(a->prompt);
    json_decref(a->system_msg);
    a->prompt = p;
    a->system_msg = msg;
    return REIN_OK;
}

rein_agent *rein_agent_new(rein_provider *provider, const rein_registry *reg, rein_error *err)
{
    rein_agent *a;

    if (!provider || !reg) {
        rein_error_set(err, REIN_EINVAL, "an agent needs a provider and a tool registry");
        return NULL;
    }
    a = rein_calloc(1, sizeof(*a));
    if (!a) {
        rein_error_set(err, REIN_ENOMEM, "out of memory");
        return NULL;
    }
    a->provider = provider;
    a->reg = reg;
    a->max_parallel = DEFAULT_MAX_PARALLEL;
    atomic_init(&a->tools_bytes, -1);
    rein_provider_caps(provider, &a->caps);
    pthread_mutex_init(&a->pool_mu, NULL);
    pthread_mutex_init(&a->vocab_mu, NULL);
    /* The self-check asks with the same system message every time: made once, so each call's
     * history takes it as it is instead of copying and writing the text again (issue 25). */
    a->verifier_msg =
        json_pack("{s:s, s:s}", "role", "system", "content", rein_agent_review_system());
    if (!a->verifier_msg || build_prompt(a) != REIN_OK) {
        rein_agent_free(a);
        rein_error_set(err, REIN_ENOMEM, "out of memory");
        return NULL;
    }
    return a;
}

void rein_agent_free(rein_agent *a)
{
    if (!a)
        return;
    rein_pool_free(a->own_pool);
    pthread_mutex_destroy(&a->pool_mu);
    rein__agent_vocab_drop(a);
    pthread_mutex_destroy(&a->vocab_mu);
    rein_free(a->role);
    rein_free(a->prompt);
    json_decref(a->system_msg);
    json_decref(a->verifier_msg);
    rein_free(a);
}

rein_err rein_agent_set_system_prompt(rein_agent *a, const char *text)
{
    char *role = NULL;

    if (text && !(role = rein_strdup(text)))
        return REIN_ENOMEM;
    rein_free(a->role);
    a->role = role;
    return build_prompt(a);
}

const char *rein_agent_system_prompt(const rein_agent *a)
{
    return a->prompt;
}

const char *rein_agent_tool_rules(void)
{
    /* The section starts with a blank line and a heading; the rules alone begin after them. */
    return tool_section + strlen("\n\n");
}

void rein_agent_set_pool(rein_agent *a, rein_pool *pool)
{
    pthread_mutex_lock(&a->pool_mu);
    a->pool = pool;
    pthread_mutex_unlock(&a->pool_mu);
}

rein_pool *rein__agent_pool(rein_agent *a)
{
    rein_pool *p;

    pthread_mutex_lock(&a->pool_mu);
    if (!a->pool && !a->own_pool)
        a->own_pool = rein_pool_new(DEFAULT_POOL_THREADS, NULL);
    p = a->pool ? a->pool : a->own_pool;
    pthread_mutex_unlock(&a->pool_mu);
    return p;
}

void rein_agent_set_max_parallel(rein_agent *a, unsigned n)
{
    a->max_parallel = n ? n : DEFAULT_MAX_PARALLEL;
}

void rein_agent_set_rules(rein_agent *a, rein_provider *rules)
{
    a->rules = rules;
}

void rein_agent_set_verifier(rein_agent *a, rein_provider *verifier)
{
    a->verifier = verifier;
}

void rein_agent_set_observer(rein_agent *a, const struct rein_agent_observer *obs)
{
    if (obs)
        a->obs = *obs;
    else
        memset(&a->obs, 0, sizeof(a->obs));
}

void rein_agent_set_context_window(rein_agent *a, int64_t tokens)
{
    a->context_window = tokens > 0 ? tokens : 0;
}

const rein_registry *rein_agent_registry(const rein_agent *a)
{
    return a ? a->reg : NULL;
}
