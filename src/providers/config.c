/*
 * Provider configuration: the preset table (one row per provider name: its wire protocol,
 * base URL, key variable, auth header and quirks), settings by name as the command line,
 * the environment and the config file give them, and the model capability table of
 * docs/DESIGN.md [react] (which families can call tools, in parallel, stream, and state a
 * usable confidence), overridable per model prefix.
 *
 * Base URLs follow the official SDKs: an OpenAI-style base ends in /v1 and /chat/completions
 * is appended; DashScope's native base ends in /api/v1 and
 * /services/aigc/text-generation/generation is appended; Anthropic's base is the host and
 * /v1/messages is appended; Ollama's base is the host and /api/chat is appended; Gemini's base
 * ends in the API version (AI Studio) or in .../publishers/google (Vertex AI) and
 * /models/MODEL:generateContent is appended; Claude on Vertex AI's ends in
 * .../publishers/anthropic and /models/MODEL:rawPredict is appended.
 *
 * The API key is only ever copied between these structs and into one HTTP header; no
 * function here formats it into a message.
 */
#include "provider_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/*
 * The presets, one row each (Azure's base URL is the resource endpoint, its key goes in the
 * api-key header, and azure.c makes the deployment's address): name, wire, default base URL, the environment variable of the
 * key, the key's header when it is not the wire's, quirks, a summary for help texts, and the
 * setup of a provider that is not an HTTP wire at a base URL. The table and the list of
 * names come from this one list.
 */
#define REIN__PRESETS(X)                                                                           \
    X("openai", &rein__wire_openai, "https://api.openai.com/v1", "OPENAI_API_KEY", NULL,           \
      Q_MAX_COMPLETION_TOKENS, "OpenAI chat completions", NULL)                                    \
    X("anthropic", &rein__wire_anthropic, "https://api.anthropic.com", "ANTHROPIC_API_KEY", NULL,  \
      0, "Anthropic messages", NULL)                                                               \
    X("dashscope", &rein__wire_openai, "https://dashscope.aliyuncs.com/compatible-mode/v1",        \
      "DASHSCOPE_API_KEY", NULL, Q_ENABLE_THINKING_OFF_NONSTREAM,                                  \
      "Alibaba DashScope (Qwen), OpenAI-compatible mode", NULL)                                    \
    X("ollama", &rein__wire_ollama, "http://localhost:11434", NULL, NULL, 0,                       \
      "Ollama native /api/chat (NDJSON)", NULL)                                                    \
    X("ollama-openai", &rein__wire_openai, "http://localhost:11434/v1", NULL, NULL, 0,             \
      "Ollama's OpenAI-compatible /v1", NULL)                                                      \
    X("vllm", &rein__wire_openai, "http://localhost:8000/v1", NULL, NULL, 0,                       \
      "vLLM OpenAI-compatible server", NULL)                                                       \
    X("llamacpp", &rein__wire_openai, "http://localhost:8080/v1", NULL, NULL, 0,                   \
      "llama.cpp llama-server", NULL)                                                              \
    X("lmstudio", &rein__wire_openai, "http://localhost:1234/v1", NULL, NULL, 0,                   \
      "LM Studio local server", NULL)                                                              \
    X("openai-compatible", &rein__wire_openai, NULL, NULL, NULL, 0,                                \
      "any OpenAI-compatible server (set the base URL)", NULL)                                     \
    X("mistral", &rein__wire_openai, "https://api.mistral.ai/v1", "MISTRAL_API_KEY", NULL,         \
      Q_MISTRAL | Q_NO_STREAM_OPTIONS, "Mistral AI chat completions (La Plateforme)", NULL)        \
    X("deepseek", &rein__wire_openai, "https://api.deepseek.com", "DEEPSEEK_API_KEY", NULL,        \
      Q_SEND_REASONING | Q_REASONING_ON_CALLS, "DeepSeek chat completions", NULL)                  \
    X("xai", &rein__wire_openai, "https://api.x.ai/v1", "XAI_API_KEY", NULL, Q_XAI_PARAMS,         \
      "xAI (Grok) chat completions", NULL)                                                         \
    X("openrouter", &rein__wire_openai, "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY",      \
      NULL, 0, "OpenRouter (many upstreams, one OpenAI-compatible API)", NULL)                     \
    X("groq", &rein__wire_openai, "https://api.groq.com/openai/v1", "GROQ_API_KEY", NULL,          \
      Q_GROQ_PARAMS, "Groq chat completions", NULL)                                                \
    X("together", &rein__wire_openai, "https://api.together.xyz/v1", "TOGETHER_API_KEY", NULL, 0,  \
      "Together AI chat completions", NULL)                                                        \
    X("fireworks", &rein__wire_openai, "https://api.fireworks.ai/inference/v1",                    \
      "FIREWORKS_API_KEY", NULL, 0, "Fireworks AI chat completions", NULL)                         \
    X("cerebras", &rein__wire_openai, "https://api.cerebras.ai/v1", "CEREBRAS_API_KEY", NULL, 0,   \
      "Cerebras inference chat completions", NULL)                                                 \
    X("moonshot", &rein__wire_openai, "https://api.moonshot.ai/v1", "MOONSHOT_API_KEY", NULL,      \
      Q_SEND_REASONING | Q_REASONING_ON_CALLS | Q_KIMI, "Moonshot AI (Kimi) chat completions",     \
      NULL)                                                                                        \
    X("zai", &rein__wire_openai, "https://api.z.ai/api/paas/v4", "ZAI_API_KEY", NULL,              \
      Q_SEND_REASONING, "Z.ai (GLM) chat completions", NULL)                                       \
    X("dashscope-native", &rein__wire_dashscope, "https://dashscope.aliyuncs.com/api/v1",          \
      "DASHSCOPE_API_KEY", NULL, Q_ENABLE_THINKING_OFF_NONSTREAM,                                  \
      "Alibaba DashScope (Qwen), native text-generation API", NULL)                                \
    X("openai-responses", &rein__wire_responses, "https://api.openai.com/v1", "OPENAI_API_KEY",    \
      NULL, 0, "OpenAI Responses API (/v1/responses)", NULL)                                       \
    X("azure", &rein__wire_openai, NULL, "AZURE_OPENAI_API_KEY",                                   \
      "api-key: ", Q_MAX_COMPLETION_TOKENS,                                                        \
      "Azure OpenAI chat completions (a deployment at a resource)", rein__azure_open)              \
    X("azure-responses", &rein__wire_responses, NULL, "AZURE_OPENAI_API_KEY", "api-key: ", 0,      \
      "Azure OpenAI Responses API (v1)", rein__azure_open)                                         \
    X("replay", NULL, NULL, NULL, NULL, 0, "serves a recording made with --record",                \
      rein__replay_setup)                                                                          \
    X("rules", &rein__wire_rules, NULL, NULL, NULL, 0,                                             \
      "rule routing from the tools' routes, without a model", rein__rules_open)                    \
    X("gemini", &rein__wire_gemini, "https://generativelanguage.googleapis.com/v1beta",            \
      "GEMINI_API_KEY", NULL, 0, "Google Gemini API (AI Studio), generateContent", NULL)           \
    X("vertex", &rein__wire_gemini, NULL, "GOOGLE_ACCESS_TOKEN", "Authorization: Bearer ", 0,      \
      "Gemini on Google Vertex AI (bearer token; project from GOOGLE_CLOUD_PROJECT)",              \
      rein__vertex_open)                                                                           \
    X("vertex-anthropic", &rein__wire_vertex_anthropic, NULL, "GOOGLE_ACCESS_TOKEN",               \
      "Authorization: Bearer ", 0,                                                                 \
      "Claude on Google Vertex AI (bearer token; project from ANTHROPIC_VERTEX_PROJECT_ID)",       \
      rein__vertex_anthropic_open)                                                                 \
    X("gemini-openai", &rein__wire_openai,                                                         \
      "https://generativelanguage.googleapis.com/v1beta/openai", "GEMINI_API_KEY", NULL, 0,        \
      "Gemini's OpenAI-compatible endpoint", NULL)                                                 \
    X("bedrock", &rein__wire_bedrock, NULL, NULL, NULL, 0,                                         \
      "Amazon Bedrock Converse (SigV4 from the AWS environment and profiles, or an API key)",      \
      rein__bedrock_open)

#define PRESET_ROW(name, wire, base, key_env, auth, quirks, summary, open)                         \
    {name, wire, base, key_env, auth, quirks, summary, open},
static const struct rein__preset presets[] = {REIN__PRESETS(PRESET_ROW)};
#define PRESET_NAME(name, ...) name,
static const char *const preset_names[] = {REIN__PRESETS(PRESET_NAME) NULL};
#define NPRESETS REIN_ARRAY_SIZE(presets)

const char *const *rein_provider_names(void)
{
    return preset_names;
}

const struct rein__preset *rein__preset_find(const char *name)
{
    for (size_t i = 0; name && i < NPRESETS; i++) {
        if (strcasecmp(name, presets[i].name) == 0)
            return &presets[i];
    }
    return NULL;
}

/* ---------------------------------------------------------------------------------------
 * Capabilities
 */
static const struct {
    const char *prefix;
    struct rein_model_caps caps;
} caps_table[] = {
    /* prefix    tools  parallel stream confidence context reasoning max_output (OpenAI and
     * Google document each model's; 0 where rein does not know it) */
    {"gpt-4o", {true, true, true, true, 128000, false, 16384}},
    {"gpt-4.1", {true, true, true, true, 1047576, false, 32768}},
    {"gpt-4-turbo", {true, true, true, true, 128000, false, 4096}},
    {"gpt-4", {true, true, true, true, 8192, false, 8192}},
    {"gpt-5", {true, true, true, true, 400000, true, 128000}},
    {"gpt-5-chat", {true, true, true, true, 400000, false, 16384}},
    {"gpt-3.5-turbo", {true, true, true, false, 16385, false, 4096}},
    {"o1", {true, true, true, false, 200000, true, 100000}},
    {"o3", {true, true, true, false, 200000, true, 100000}},
    {"o4", {true, true, true, false, 200000, true, 100000}},
    {"codex", {true, true, true, false, 200000, true, 0}},
    {"gpt-oss", {true, true, true, false, 131072, true, 0}},
    /* Claude's context and output limits follow its version (claude_limits) */
    {"claude-3", {true, true, true, true, 200000, false, 0}},
    {"claude-3-7", {true, true, true, true, 200000, true, 0}},
    {"claude-", {true, true, true, true, 200000, true, 0}},
    {"qwen-max", {true, true, true, false, 32768, false, 0}},
    {"qwen-plus", {true, true, true, false, 131072, false, 0}},
    {"qwen-turbo", {true, true, true, false, 1000000, false, 0}},
    {"qwen3", {true, true, true, false, 131072, false, 0}},
    {"qwen2.5", {true, true, true, false, 32768, false, 0}},
    {"qwen", {true, false, true, false, 32768, false, 0}},
    {"deepseek", {true, true, true, false, 128000, false, 0}},
    {"llama3", {true, false, true, false, 128000, false, 0}},
    {"llama-3", {true, false, true, false, 128000, false, 0}},
    {"mistral", {true, true, true, false, 32768, false, 0}},
    {"gemini", {true, true, true, false, 1000000, false, 0}},
    {"gemini-2.5", {true, true, true, false, 1000000, true, 65536}},
    {"gemini-3", {true, true, true, false, 1000000, true, 65536}},
    /* Bedrock model ids: the provider (and a cross-region profile) before the family. */
    {"amazon.nova", {true, true, true, false, 300000, false, 0}},
    {"us.amazon.nova", {true, true, true, false, 300000, false, 0}},
    {"meta.llama3", {true, false, true, false, 128000, false, 0}},
    {"us.meta.llama3", {true, false, true, false, 128000, false, 0}},
    {"mistral.mistral-large", {true, true, true, false, 128000, false, 0}},
    {"grok", {true, true, true, false, 131072, false, 0}},
    /* the OpenAI-compatible providers of decision 0105, as their model pages give them */
    {"grok-4", {true, true, true, false, 256000, true, 0}},
    {"grok-3-mini", {true, true, true, false, 131072, true, 0}},
    {"grok-code-fast", {true, true, true, false, 256000, true, 0}},
    {"deepseek-chat", {true, true, true, false, 128000, false, 8192}},
    {"deepseek-reasoner", {true, true, true, false, 128000, true, 65536}},
    {"magistral", {true, true, true, false, 128000, true, 0}},
    {"mistral-large", {true, true, true, false, 128000, false, 0}},
    {"mistral-medium", {true, true, true, false, 128000, false, 0}},
    {"mistral-small", {true, true, true, false, 128000, false, 0}},
    {"codestral", {true, true, true, false, 256000, false, 0}},
    {"devstral", {true, true, true, false, 128000, false, 0}},
    /* Moonshot's and Z.ai's models (decision 0108): Kimi K2 from 2.5 on and the -thinking ones
     * think, as GLM does from 4.5 on */
    {"kimi-k2", {true, true, true, false, 262144, false, 0}},
    {"kimi-k2.", {true, true, true, false, 262144, true, 0}},
    {"kimi-k2-thinking", {true, true, true, false, 262144, true, 0}},
    {"moonshot-v1-8k", {true, true, true, false, 8192, false, 0}},
    {"moonshot-v1-32k", {true, true, true, false, 32768, false, 0}},
    {"moonshot-v1-128k", {true, true, true, false, 131072, false, 0}},
    {"glm-4.5", {true, true, true, false, 131072, true, 0}},
    {"glm-4.6", {true, true, true, false, 200000, true, 0}},
    {"glm-4.7", {true, true, true, false, 200000, true, 0}},
    {"glm-5", {true, true, true, false, 200000, true, 0}},
    {"glm-5.2", {true, true, true, false, 1048576, true, 0}},
    /* the rules provider reads every result whole: nothing may be shortened for it */
    {"rules", {true, false, false, false, INT64_C(1) << 40, false, 0}},
};
static const struct rein_model_caps default_caps = {true, false, true, false, 8192, false, 0};

static size_t prefix_len(const char *model, const char *prefix)
{
    size_t n = strlen(prefix);
    return strncasecmp(model, prefix, n) == 0 ? n : 0;
}

static bool table_lookup(const char *model, struct rein_model_caps *caps)
{
    size_t best = 0;

    for (size_t i = 0; i < REIN_ARRAY_SIZE(caps_table); i++) {
        size_t n = prefix_len(model, caps_table[i].prefix);
        if (n > best) {
            best = n;
            *caps = caps_table[i].caps;
        }
    }
    return best > 0;
}

/*
 * Claude's context window and output limit by version, as Anthropic's model pages give them:
 * from 4.6 on (every family, Haiku 5.5 too) 1M tokens and 128K out; 4.5 200K and 64K; Opus 4 and
 * 4.1 32K out, Sonnet 4 and 3.7 64K; 3.5 8,192; the Claude 3 models 4,096. A preview without a
 * number keeps the family's row (its limits are not published).
 */
static void claude_limits(const char *model, struct rein_model_caps *caps)
{
    bool newest;
    int v = rein__claude_version(model, &newest);
    const char *c = strstr(model, "claude-");

    if (v >= 46) {
        caps->context_window = 1000000;
        caps->max_output = 128000;
    } else if (v == 45 || v == 37 || (v == 40 && !strstr(c, "opus"))) {
        caps->max_output = 64000;
    } else if (v == 40 || v == 41) {
        caps->max_output = 32000;
    } else if (v == 35) {
        caps->max_output = 8192;
    } else if (v == 30) {
        caps->max_output = 4096;
    }
}

void rein_model_caps_lookup(const char *model, struct rein_model_caps *caps)
{
    const char *slash, *claude, *family = NULL;

    *caps = default_caps;
    if (!model)
        return;
    /* "Qwen/Qwen3-8B", "meta-llama/Llama-3.1-8B": the family is after the organisation. */
    slash = strrchr(model, '/');
    if (slash && table_lookup(slash + 1, caps))
        family = slash + 1;
    /* Bedrock names Claude after its provider and a region's inference profile
     * ("us.anthropic.claude-sonnet-4-…"): the family is Claude's. */
    claude = strstr(model, "anthropic.claude");
    if (!family && claude && table_lookup(claude + strlen("anthropic."), caps))
        family = claude + strlen("anthropic.");
    if (!family && table_lookup(model, caps))
        family = model;
    if (family && strncasecmp(family, "claude-", 7) == 0)
        claude_limits(family, caps);
}

void rein__caps_resolve(const struct rein_provider_config *cfg, const char *model,
                        struct rein_model_caps *caps)
{
    size_t best = 0;

    rein_model_caps_lookup(model, caps);
    for (size_t i = 0; model && i < cfg->ncaps; i++) {
        size_t n = prefix_len(model, cfg->caps[i].prefix);
        if (n > best || (n == 0 && cfg->caps[i].prefix[0] == '\0' && best == 0)) {
            best = n;
            *caps = cfg->caps[i].caps;
        }
    }
}

/* ---------------------------------------------------------------------------------------
 * Settings
 */

rein_provider_config *rein_provider_config_new(void)
{
    rein_provider_config *cfg = rein_calloc(1, sizeof(*cfg));

    if (!cfg)
        return NULL;
    cfg->timeout[REIN_TIMEOUT_CONNECT] = 10000;
    cfg->timeout[REIN_TIMEOUT_FIRST_BYTE] = 60000;
    cfg->timeout[REIN_TIMEOUT_IDLE] = 60000;
    cfg->timeout[REIN_TIMEOUT_TOTAL] = 600000;
    cfg->max_retries = 2;
    cfg->retry_base_ms = 500;
    cfg->retry_max_wait_ms = 60000;
    cfg->enable_thinking = -1;
    cfg->preset = rein__preset_find("openai");
    cfg->provider = rein_strdup("openai");
    cfg->quirks = cfg->preset->quirks;
    if (!cfg->provider) {
        rein_free(cfg);
        return NULL;
    }
    return cfg;
}

void rein__config_release(struct rein_provider_config *cfg)
{
    rein_free(cfg->provider);
    rein_free(cfg->model);
    rein_free(cfg->base_url);
    if (cfg->api_key) {
        /* The key is wiped before the memory goes back. */
        memset(cfg->api_key, 0, strlen(cfg->api_key));
        rein_free(cfg->api_key);
    }
    rein_free(cfg->api_key_env);
    rein_free(cfg->record);
    rein_free(cfg->replay);
    rein_free(cfg->anthropic_version);
    rein_free(cfg->user_agent);
    rein_free(cfg->deployment);
    rein_free(cfg->api_version);
    for (size_t i = 0; i < cfg->ncaps; i++)
        rein_free(cfg->caps[i].prefix);
    rein_free(cfg->caps);
    memset(cfg, 0, sizeof(*cfg));
}

void rein_provider_config_free(rein_provider_config *cfg)
{
    if (!cfg)
        return;
    rein__config_release(cfg);
    rein_free(cfg);
}

static rein_err dup_into(char **slot, const char *value)
{
    char *v = NULL;

    if (value && value[0]) {
        v = rein_strdup(value);
        if (!v)
            return REIN_ENOMEM;
    }
    rein_free(*slot);
    *slot = v;
    return REIN_OK;
}

rein_err rein__config_copy(struct rein_provider_config *dst, const struct rein_provider_config *src)
{
    char **const dslots[] = {
        &dst->provider,    &dst->model,      &dst->base_url,   &dst->api_key,
        &dst->api_key_env, &dst->record,     &dst->replay,     &dst->anthropic_version,
        &dst->user_agent,  &dst->deployment, &dst->api_version};
    const char *const sslots[] = {
        src->provider,    src->model,      src->base_url,   src->api_key,
        src->api_key_env, src->record,     src->replay,     src->anthropic_version,
        src->user_agent,  src->deployment, src->api_version};

    *dst = *src;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(dslots); i++)
        *dslots[i] = NULL;
    dst->caps = NULL;
    dst->ncaps = 0;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(dslots); i++) {
        if (dup_into(dslots[i], sslots[i])) {
            rein__config_release(dst);
            return REIN_ENOMEM;
        }
    }
    if (src->ncaps) {
        dst->caps = rein_calloc(src->ncaps, sizeof(*dst->caps));
        if (!dst->caps) {
            rein__config_release(dst);
            return REIN_ENOMEM;
        }
        for (size_t i = 0; i < src->ncaps; i++) {
            dst->caps[i].caps = src->caps[i].caps;
            dst->caps[i].prefix = rein_strdup(src->caps[i].prefix);
            dst->ncaps++;
            if (!dst->caps[i].prefix) {
                rein__config_release(dst);
                return REIN_ENOMEM;
            }
        }
    }
    return REIN_OK;
}

rein_err rein_provider_config_set_provider(rein_provider_config *cfg, const char *name,
                                           rein_error *err)
{
    const struct rein__preset *p = rein__preset_find(name);
    rein_err rc;

    if (!p)
        return rein_error_set(err, REIN_EINVAL,
                              "unknown provider '%s' (one of: openai, anthropic, dashscope, "
                              "ollama, ollama-openai, vllm, llamacpp, lmstudio, "
                              "openai-compatible, dashscope-native, openai-responses, azure, "
                              "azure-responses, replay, rules)",
                              name ? name : "");
    if (cfg->preset == p)
        return REIN_OK; /* the same provider again (file, then environment): keep settings */
    rc = dup_into(&cfg->provider, p->name);
    if (rc)
        return rc;
    /* A new preset brings its own base URL and quirks; a key set explicitly stays. */
    cfg->preset = p;
    cfg->quirks = p->quirks;
    rein_free(cfg->base_url);
    cfg->base_url = NULL;
    return REIN_OK;
}

rein_err rein_provider_config_set_model(rein_provider_config *cfg, const char *model)
{
    return dup_into(&cfg->model, model);
}

rein_err rein_provider_config_set_base_url(rein_provider_config *cfg, const char *url)
{
    return dup_into(&cfg->base_url, url);
}

rein_err rein_provider_config_set_api_key(rein_provider_config *cfg, const char *key)
{
    if (cfg->api_key)
        memset(cfg->api_key, 0, strlen(cfg->api_key));
    return dup_into(&cfg->api_key, key);
}

void rein_provider_config_set_timeout(rein_provider_config *cfg, enum rein_provider_timeout which,
                                      int64_t ms)
{
    if ((unsigned)which < 4)
        cfg->timeout[which] = ms < 0 ? 0 : ms;
}

void rein_provider_config_set_max_retries(rein_provider_config *cfg, int n)
{
    cfg->max_retries = n < 0 ? 0 : n > 20 ? 20 : n;
}

rein_err rein_provider_config_set_record(rein_provider_config *cfg, const char *path)
{
    return dup_into(&cfg->record, path);
}

rein_err rein_provider_config_set_caps(rein_provider_config *cfg, const char *prefix,
                                       const struct rein_model_caps *caps)
{
    struct rein__caps_override *v;
    char *p;

    for (size_t i = 0; i < cfg->ncaps; i++) {
        if (strcmp(cfg->caps[i].prefix, prefix) == 0) {
            cfg->caps[i].caps = *caps;
            return REIN_OK;
        }
    }
    p = rein_strdup(prefix);
    v = p ? rein_realloc(cfg->caps, (cfg->ncaps + 1) * sizeof(*v)) : NULL;
    if (!v) {
        rein_free(p);
        return REIN_ENOMEM;
    }
    cfg->caps = v;
    cfg->caps[cfg->ncaps].prefix = p;
    cfg->caps[cfg->ncaps].caps = *caps;
    cfg->ncaps++;
    return REIN_OK;
}

/* Every member a provider section may hold: rein_provider_config_set()'s keys and
 * "capabilities". Suggestions for a mistyped key come from this list. */
static const char *const file_keys[] = {"provider",
                                        "model",
                                        "base_url",
                                        "api_key",
                                        "api_key_env",
                                        "record",
                                        "replay",
                                        "anthropic_version",
                                        "user_agent",
                                        "text_calls",
                                        "think_tags",
                                        "enable_thinking",
                                        "reasoning_effort",
                                        "max_tokens_field",
                                        "send_reasoning",
                                        "connect_timeout_ms",
                                        "first_byte_timeout_ms",
                                        "idle_timeout_ms",
                                        "total_timeout_ms",
                                        "max_retries",
                                        "retry_base_ms",
                                        "retry_max_wait_ms",
                                        "deployment",
                                        "api_version",
                                        "auth",
                                        "previous_response_id",
                                        "capabilities",
                                        NULL};

static bool parse_i64(const char *s, int64_t *out)
{
    char *end;
    long long v;

    if (!s || !*s)
        return false;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno || *end || v < 0)
        return false;
    *out = v;
    return true;
}

static int parse_bool(const char *s)
{
    if (!s)
        return -1;
    if (!strcasecmp(s, "true") || !strcmp(s, "1") || !strcasecmp(s, "yes") || !strcasecmp(s, "on"))
        return 1;
    if (!strcasecmp(s, "false") || !strcmp(s, "0") || !strcasecmp(s, "no") || !strcasecmp(s, "off"))
        return 0;
    return -1;
}

static rein_err bad_value(rein_error *err, const char *key, const char *value, const char *want)
{
    return rein_error_set(err, REIN_EINVAL, "provider setting %s: '%s' is not %s", key,
                          value ? value : "", want);
}

static rein_err set_number(rein_provider_config *cfg, const char *key, const char *value,
                           rein_error *err)
{
    static const struct {
        const char *key;
        int which; /* 0-3 timeout, 4 retries, 5 base, 6 max wait */
    } nums[] = {{"connect_timeout_ms", REIN_TIMEOUT_CONNECT},
                {"first_byte_timeout_ms", REIN_TIMEOUT_FIRST_BYTE},
                {"idle_timeout_ms", REIN_TIMEOUT_IDLE},
                {"total_timeout_ms", REIN_TIMEOUT_TOTAL},
                {"max_retries", 4},
                {"retry_base_ms", 5},
                {"retry_max_wait_ms", 6}};
    int64_t v;

    for (size_t i = 0; i < REIN_ARRAY_SIZE(nums); i++) {
        if (strcmp(key, nums[i].key) != 0)
            continue;
        if (!parse_i64(value, &v))
            return bad_value(err, key, value, "a whole number of 0 or more");
        if (nums[i].which < 4)
            rein_provider_config_set_timeout(cfg, (enum rein_provider_timeout)nums[i].which, v);
        else if (nums[i].which == 4)
            rein_provider_config_set_max_retries(cfg, v > 20 ? 20 : (int)v);
        else if (nums[i].which == 5)
            cfg->retry_base_ms = v;
        else
            cfg->retry_max_wait_ms = v;
        return REIN_OK;
    }
    return REIN_ENOTFOUND;
}

rein_err rein_provider_config_set(rein_provider_config *cfg, const char *key, const char *value,
                                  rein_error *err)
{
    rein_err rc;
    int b;

    if (!key)
        return rein_error_set(err, REIN_EINVAL, "provider setting without a name");
    if (strcmp(key, "provider") == 0)
        return rein_provider_config_set_provider(cfg, value, err);
    if (strcmp(key, "model") == 0)
        return rein_provider_config_set_model(cfg, value);
    if (strcmp(key, "base_url") == 0)
        return rein_provider_config_set_base_url(cfg, value);
    if (strcmp(key, "api_key") == 0)
        return rein_provider_config_set_api_key(cfg, value);
    if (strcmp(key, "api_key_env") == 0)
        return dup_into(&cfg->api_key_env, value);
    if (strcmp(key, "record") == 0)
        return dup_into(&cfg->record, value);
    if (strcmp(key, "replay") == 0)
        return dup_into(&cfg->replay, value);
    if (strcmp(key, "anthropic_version") == 0)
        return dup_into(&cfg->anthropic_version, value);
    if (strcmp(key, "user_agent") == 0)
        return dup_into(&cfg->user_agent, value);
    if (strcmp(key, "deployment") == 0)
        return dup_into(&cfg->deployment, value);
    if (strcmp(key, "api_version") == 0)
        return dup_into(&cfg->api_version, value);
    if (strcmp(key, "auth") == 0) {
        /* Which header the key goes in: the preset's (api-key for Azure), or a bearer token
         * (a Microsoft Entra ID token, a proxy that wants one). */
        if (value && strcmp(value, "bearer") == 0)
            cfg->auth_bearer = true;
        else if (value && (strcmp(value, "api-key") == 0 || strcmp(value, "default") == 0))
            cfg->auth_bearer = false;
        else
            return bad_value(err, key, value, "bearer, api-key or default");
        return REIN_OK;
    }
    if (strcmp(key, "previous_response_id") == 0) {
        b = parse_bool(value);
        if (b < 0)
            return bad_value(err, key, value, "true or false");
        cfg->previous_response_id = b > 0;
        return REIN_OK;
    }
    if (strcmp(key, "text_calls") == 0) {
        if (value && strcmp(value, "from_text") == 0)
            cfg->text_calls = REIN_TEXT_CALLS_FROM_TEXT;
        else if (value && strcmp(value, "report") == 0)
            cfg->text_calls = REIN_TEXT_CALLS_REPORT;
        else
            return bad_value(err, key, value, "from_text or report");
        return REIN_OK;
    }
    if (strcmp(key, "think_tags") == 0) {
        b = parse_bool(value);
        if (b < 0)
            return bad_value(err, key, value, "true or false");
        cfg->keep_think_tags = !b;
        return REIN_OK;
    }
    if (strcmp(key, "enable_thinking") == 0) {
        b = value && strcmp(value, "default") == 0 ? -1 : parse_bool(value);
        if (b < 0 && !(value && strcmp(value, "default") == 0))
            return bad_value(err, key, value, "true, false or default");
        cfg->enable_thinking = b;
        return REIN_OK;
    }
    if (strcmp(key, "reasoning_effort") == 0) {
        enum rein_reasoning e = REIN_REASONING_UNSET;
        if (value && strcmp(value, "default") != 0 && rein_reasoning_from_word(value, &e))
            return bad_value(err, key, value,
                             "none, minimal, low, medium, high, xhigh, max or default");
        cfg->reasoning = e;
        return REIN_OK;
    }
    if (strcmp(key, "max_tokens_field") == 0) {
        if (value && strcmp(value, "max_tokens") == 0)
            cfg->quirks &= ~(unsigned)Q_MAX_COMPLETION_TOKENS;
        else if (value && strcmp(value, "max_completion_tokens") == 0)
            cfg->quirks |= Q_MAX_COMPLETION_TOKENS;
        else
            return bad_value(err, key, value, "max_tokens or max_completion_tokens");
        return REIN_OK;
    }
    if (strcmp(key, "send_reasoning") == 0) {
        b = parse_bool(value);
        if (b < 0)
            return bad_value(err, key, value, "true or false");
        cfg->quirks =
            b ? cfg->quirks | Q_SEND_REASONING : cfg->quirks & ~(unsigned)Q_SEND_REASONING;
        return REIN_OK;
    }
    rc = set_number(cfg, key, value, err);
    if (rc != REIN_ENOTFOUND)
        return rc;
    {
        const char *near = rein_suggest(key, file_keys, SIZE_MAX);
        return rein_error_set(err, REIN_EINVAL, "unknown provider setting '%s'%s%s%s", key,
                              near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
    }
}

rein_err rein_provider_config_from_env(rein_provider_config *cfg, rein_error *err)
{
    static const struct {
        const char *env, *key;
    } vars[] = {{"REIN_PROVIDER", "provider"},     {"REIN_MODEL", "model"},
                {"REIN_BASE_URL", "base_url"},     {"REIN_API_KEY", "api_key"},
                {"REIN_RECORD", "record"},         {"REIN_REPLAY", "replay"},
                {"REIN_TEXT_CALLS", "text_calls"}, {"REIN_REASONING_EFFORT", "reasoning_effort"}};

    for (size_t i = 0; i < REIN_ARRAY_SIZE(vars); i++) {
        const char *v = getenv(vars[i].env);
        if (!v || !*v)
            continue;
        rein_err rc = rein_provider_config_set(cfg, vars[i].key, v, err);
        if (rc) {
            if (i != 3) /* never echo the key */
                rein_error_prefix(err, "%s: ", vars[i].env);
            return rc;
        }
    }
    return REIN_OK;
}

/* ---------------------------------------------------------------------------------------
 * The configuration file
 *
 * A check that fails names the member by its JSON Pointer in `at`, so the file loader can turn
 * it into a line and column: a person fixes "rein.json:3:5: unknown key "modle"" at once.
 */

/* Members of the top level that belong to others or to nobody: the MCP client's servers and
 * the two keys editors and schemas add. */
static const char *const foreign_keys[] = {"mcpServers", "$schema", "$comment", NULL};

static bool in_list(const char *const *list, const char *key)
{
    for (size_t i = 0; list[i]; i++) {
        if (strcmp(list[i], key) == 0)
            return true;
    }
    return false;
}

/* Appends "/key" (escaped as RFC 6901 wants) to the pointer in at. */
static void at_push(char *at, size_t size, const char *key)
{
    size_t n = strlen(at);

    if (n + 1 < size)
        at[n++] = '/';
    for (const char *k = key; *k && n + 2 < size; k++) {
        if (*k == '~' || *k == '/') {
            at[n++] = '~';
            at[n++] = *k == '~' ? '0' : '1';
        } else {
            at[n++] = *k;
        }
    }
    at[n] = '\0';
}

static rein_err unknown_key(rein_error *err, const char *key, const char *const *known,
                            const char *where)
{
    const char *near = rein_suggest(key, known, SIZE_MAX);

    return rein_error_set(err, REIN_EINVAL, "unknown key \"%.80s\"%s%s%s%s", key,
                          where ? where : "", near ? " (did you mean \"" : "", near ? near : "",
                          near ? "\"?)" : "");
}

static rein_err apply_caps(rein_provider_config *cfg, const json_t *obj, char *at, size_t size,
                           rein_error *err)
{
    static const char *const flags[] = {
        "tools",          "parallel_tools", "streaming",  "confidence",
        "context_window", "reasoning",      "max_output", NULL};
    size_t base = strlen(at);
    const char *prefix, *name;
    json_t *v, *m;

    if (!json_is_object(obj))
        return rein_error_set(err, REIN_EINVAL,
                              "capabilities: must be an object of model prefixes");
    json_object_foreach((json_t *)obj, prefix, v)
    {
        struct rein_model_caps caps;
        at[base] = '\0';
        at_push(at, size, prefix);
        if (!json_is_object(v))
            return rein_error_set(err, REIN_EINVAL, "capabilities.%s: must be an object", prefix);
        rein__caps_resolve(cfg, prefix, &caps);
        json_object_foreach(v, name, m)
        {
            size_t mark = strlen(at);
            at_push(at, size, name);
            if (!in_list(flags, name))
                return unknown_key(err, name, flags, " in capabilities");
            if (strcmp(name, "context_window") == 0 || strcmp(name, "max_output") == 0) {
                if (!json_is_integer(m) || json_integer_value(m) <= 0)
                    return rein_error_set(err, REIN_EINVAL,
                                          "capabilities.%s.%s: must be a positive integer", prefix,
                                          name);
                *(name[0] == 'c' ? &caps.context_window : &caps.max_output) = json_integer_value(m);
            } else if (!json_is_boolean(m)) {
                return rein_error_set(err, REIN_EINVAL, "capabilities.%s.%s: must be true or false",
                                      prefix, name);
            } else if (strcmp(name, "tools") == 0) {
                caps.tools = json_is_true(m);
            } else if (strcmp(name, "parallel_tools") == 0) {
                caps.parallel_tools = json_is_true(m);
            } else if (strcmp(name, "streaming") == 0) {
                caps.streaming = json_is_true(m);
            } else if (strcmp(name, "reasoning") == 0) {
                caps.reasoning = json_is_true(m);
            } else {
                caps.confidence = json_is_true(m);
            }
            at[mark] = '\0';
        }
        if (rein_provider_config_set_caps(cfg, prefix, &caps))
            return rein_error_set(err, REIN_ENOMEM, "out of memory");
    }
    at[base] = '\0';
    return REIN_OK;
}

static rein_err apply_member(rein_provider_config *cfg, const char *key, const json_t *v, char *at,
                             size_t size, rein_error *err)
{
    char num[32];
    const char *text;

    if (!in_list(file_keys, key))
        return unknown_key(err, key, file_keys, NULL);
    if (strcmp(key, "capabilities") == 0)
        return apply_caps(cfg, v, at, size, err);
    if (json_is_string(v))
        text = json_string_value(v);
    else if (json_is_integer(v)) {
        snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v));
        text = num;
    } else if (json_is_boolean(v))
        text = json_is_true(v) ? "true" : "false";
    else
        return rein_error_set(err, REIN_EINVAL,
                              "%s: must be a string, a number or a boolean, got %s", key,
                              rein_json_type_name(v));
    if (json_is_string(v) && strlen(text) != json_string_length(v))
        return rein_error_set(err, REIN_EINVAL, "%s: must not contain \\u0000", key);
    return rein_provider_config_set(cfg, key, text, err);
}

/* Applies obj (the whole document); on failure `at` holds the failing member's pointer. */
static rein_err apply_doc(rein_provider_config *cfg, const json_t *obj, char *at, size_t size,
                          rein_error *err)
{
    const json_t *section = json_object_get(obj, "provider"), *v;
    const char *key;
    rein_err rc;

    at[0] = '\0';
    if (!json_is_object(obj))
        return rein_error_set(err, REIN_EINVAL, "the configuration must be a JSON object, got %s",
                              rein_json_type_name(obj));
    if (section && !json_is_object(section) && !json_is_string(section)) {
        at_push(at, size, "provider");
        return rein_error_set(err, REIN_EINVAL,
                              "provider: must be a provider name or an object of provider "
                              "settings, got %s",
                              rein_json_type_name(section));
    }
    /* A section holds the provider settings; beside it only other programs' members. */
    json_object_foreach((json_t *)obj, key, v)
    {
        if (!json_is_object(section) || strcmp(key, "provider") == 0 || in_list(foreign_keys, key))
            continue;
        at_push(at, size, key);
        if (in_list(file_keys, key))
            return rein_error_set(err, REIN_EINVAL,
                                  "%s: provider settings go inside the \"provider\" object", key);
        return unknown_key(err, key, foreign_keys, NULL);
    }
    if (json_is_object(section)) {
        at_push(at, size, "provider");
        obj = section;
    }
    /* The provider first: its preset is the base the other settings change. */
    v = json_object_get(obj, "provider");
    if (json_is_string(v)) {
        size_t mark = strlen(at);
        at_push(at, size, "provider");
        rc = apply_member(cfg, "provider", v, at, size, err);
        if (rc)
            return rc;
        at[mark] = '\0';
    }
    json_object_foreach((json_t *)obj, key, v)
    {
        size_t mark = strlen(at);
        /* mcpServers belongs to the MCP client (rein_mcp_clients_add_config), same file. */
        if (strcmp(key, "provider") == 0 || (obj != section && in_list(foreign_keys, key)))
            continue;
        at_push(at, size, key);
        rc = apply_member(cfg, key, v, at, size, err);
        if (rc)
            return rc;
        at[mark] = '\0';
    }
    return REIN_OK;
}

rein_err rein_provider_config_apply_json(rein_provider_config *cfg, const json_t *obj,
                                         rein_error *err)
{
    char at[256];

    return apply_doc(cfg, obj, at, sizeof(at), err);
}

/* "NAME:LINE:COLUMN: " in front of err's message, with the position in err. */
static void point_at(rein_error *err, const char *name, int line, int column)
{
    if (!err)
        return;
    err->line = line;
    err->column = column;
    rein_error_prefix(err, "%s:%d:%d: ", name, line, column);
}

rein_err rein_provider_config_load_text(rein_provider_config *cfg, const char *text, size_t len,
                                        const char *name, rein_error *err)
{
    size_t good = rein_utf8_valid_prefix(text, len);
    int line = 1, column = 1;
    char at[256];
    json_t *doc;
    rein_err rc;

    if (!name)
        name = "configuration";
    if (good < len) {
        for (size_t i = 0; i < good; i++) {
            if (text[i] == '\n')
                line++, column = 1;
            else if (((unsigned char)text[i] & 0xC0) != 0x80)
                column++;
        }
        rein_error_set(err, REIN_EPARSE, "not valid UTF-8 at byte %zu", good + 1);
        point_at(err, name, line, column);
        return REIN_EPARSE;
    }
    doc = rein_json_parse(text, len, 0, err);
    if (!doc) {
        if (err) {
            /* jansson's own words, without the position it also appends. */
            char *tail = strstr(err->msg, " at line ");
            if (tail)
                *tail = '\0';
            line = err->line > 0 ? err->line : 1;
            column = err->column > 0 ? err->column : 1;
            point_at(err, name, line, column);
        }
        return REIN_EPARSE;
    }
    rc = apply_doc(cfg, doc, at, sizeof(at), err);
    json_decref(doc);
    if (rc) {
        line = column = 1;
        (void)rein_json_locate(text, len, at, &line, &column);
        point_at(err, name, line, column);
    }
    return rc;
}

#define CONFIG_MAX_BYTES ((size_t)4 << 20)

rein_err rein_provider_config_load_file(rein_provider_config *cfg, const char *path,
                                        rein_error *err)
{
    char *text;
    size_t len;
    rein_err rc = rein_read_file(path, CONFIG_MAX_BYTES, &text, &len, err);

    if (rc)
        return rc;
    rc = rein_provider_config_load_text(cfg, text, len, path, err);
    rein_free(text);
    return rc;
}
