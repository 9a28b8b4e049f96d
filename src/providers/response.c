/*
 * The assembled response: accessors, its JSON form (what `rein provider parse` prints) and
 * its assistant message in the neutral shape (what the history keeps).
 */
#include "provider_int.h"

#include "core/internal.h"

#include <ctype.h>
#include <string.h>

#define NAME(id, name) name,
static const char *const status_names[] = {REIN_MODEL_CALL_STATUS_MAP(NAME)};
static const char *const event_names[] = {"?", REIN_MEV_MAP(NAME)};
#undef NAME

const char *rein_model_call_status_name(enum rein_model_call_status status)
{
    if ((unsigned)status < REIN_ARRAY_SIZE(status_names))
        return status_names[status];
    return "?";
}

const char *rein_model_event_type_name(enum rein_model_event_type type)
{
    return (unsigned)type < REIN_ARRAY_SIZE(event_names) ? event_names[type] : "?";
}

const char *rein_model_call_id(const rein_model_call *c)
{
    return c->id;
}

const char *rein_model_call_name(const rein_model_call *c)
{
    return c->name.ptr;
}

const char *rein_model_call_raw_arguments(const rein_model_call *c)
{
    return c->args.ptr;
}

const json_t *rein_model_call_arguments(const rein_model_call *c)
{
    return c->status == REIN_MODEL_CALL_OK && c->doc ? rein_doc_tree(c->doc) : NULL;
}

const rein_doc *rein_model_call_document(const rein_model_call *c)
{
    return c->status == REIN_MODEL_CALL_OK ? c->doc : NULL;
}

enum rein_model_call_status rein_model_call_status(const rein_model_call *c)
{
    return c->status;
}

const char *rein_model_call_error(const rein_model_call *c)
{
    return c->error ? c->error : "";
}

bool rein_model_call_from_text(const rein_model_call *c)
{
    return c->from_text;
}

const char *rein_model_call_signature(const rein_model_call *c)
{
    return c->signature;
}

bool rein_model_call_custom(const rein_model_call *c)
{
    return c->custom;
}

bool rein_model_call_id_made_up(const char *id)
{
    if (!id || strncmp(id, "call_", 5) != 0 || strlen(id) != 21)
        return false;
    for (size_t i = 5; i < 21; i++) {
        if (!isxdigit((unsigned char)id[i]))
            return false;
    }
    return true;
}

void rein_model_response_free(rein_model_response *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->ncalls; i++) {
        rein_model_call *c = r->calls[i];
        rein_free(c->id);
        rein_free(c->signature);
        rein_buf_release(&c->name);
        rein_buf_release(&c->args);
        rein__call_drop_doc(c);
        rein_free(c->error);
        rein_free(c);
    }
    rein_free(r->calls);
    rein_buf_release(&r->text);
    rein_buf_release(&r->reasoning);
    rein_buf_release(&r->signature);
    rein_buf_release(&r->refusal);
    json_decref(r->redacted);
    json_decref(r->server_blocks);
    json_decref(r->logprobs);
    json_decref(r->annotations);
    json_decref(r->text_blocks);
    json_decref(r->thinking_blocks);
    json_decref(r->reasoning_details);
    json_decref(r->reasoning_items);
    rein_free(r->response_id);
    rein_free(r->answer_model);
    rein_free(r->answer_id);
    json_decref(r->error);
    rein_free(r->request_id);
    rein__headers_release(&r->headers);
    rein_free(r->finish_reason);
    rein_free(r->stop_sequence);
    rein_free(r);
}

const char *rein_model_response_text(const rein_model_response *r)
{
    return r->text.ptr;
}

const char *rein_model_response_reasoning(const rein_model_response *r)
{
    return r->reasoning.ptr;
}

const char *rein_model_response_signature(const rein_model_response *r)
{
    return r->signature.len ? r->signature.ptr : NULL;
}

const char *rein_model_response_refusal(const rein_model_response *r)
{
    return r->refusal.len ? r->refusal.ptr : NULL;
}

const char *rein_model_response_finish_reason(const rein_model_response *r)
{
    return r->finish_reason;
}

const char *rein_model_response_stop_sequence(const rein_model_response *r)
{
    return r->stop_sequence;
}

enum rein_finish rein_model_response_finish(const rein_model_response *r)
{
    static const struct {
        const char *word;
        enum rein_finish f;
    } map[] = {
        {"stop", REIN_FINISH_STOP},
        {"end_turn", REIN_FINISH_STOP},
        {"stop_sequence", REIN_FINISH_STOP},
        {"eos", REIN_FINISH_STOP},
        {"tool_calls", REIN_FINISH_TOOL_CALLS},
        {"tool_use", REIN_FINISH_TOOL_CALLS},
        {"function_call", REIN_FINISH_TOOL_CALLS},
        {"length", REIN_FINISH_LENGTH},
        {"max_tokens", REIN_FINISH_LENGTH},
        {"model_context_window_exceeded", REIN_FINISH_LENGTH},
        {"content_filter", REIN_FINISH_CONTENT_FILTER},
        {"refusal", REIN_FINISH_CONTENT_FILTER},
        /* Bedrock's stopReason words besides Anthropic's. */
        {"guardrail_intervened", REIN_FINISH_CONTENT_FILTER},
        {"content_filtered", REIN_FINISH_CONTENT_FILTER},
        /* Gemini's finish reasons (its candidates' finishReason, or a blocked prompt's
         * blockReason): everything a safety or policy filter ended is a content filter. */
        {"STOP", REIN_FINISH_STOP},
        {"MAX_TOKENS", REIN_FINISH_LENGTH},
        {"SAFETY", REIN_FINISH_CONTENT_FILTER},
        {"RECITATION", REIN_FINISH_CONTENT_FILTER},
        {"BLOCKLIST", REIN_FINISH_CONTENT_FILTER},
        {"PROHIBITED_CONTENT", REIN_FINISH_CONTENT_FILTER},
        {"SPII", REIN_FINISH_CONTENT_FILTER},
        {"IMAGE_SAFETY", REIN_FINISH_CONTENT_FILTER},
        {"IMAGE_PROHIBITED_CONTENT", REIN_FINISH_CONTENT_FILTER},
        {"IMAGE_RECITATION", REIN_FINISH_CONTENT_FILTER},
    };

    if (!r->finish_reason)
        return REIN_FINISH_NONE;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(map); i++) {
        if (strcmp(r->finish_reason, map[i].word) == 0)
            return map[i].f;
    }
    return REIN_FINISH_OTHER;
}

int64_t rein_model_response_input_tokens(const rein_model_response *r)
{
    return r->input_tokens;
}

int64_t rein_model_response_output_tokens(const rein_model_response *r)
{
    return r->output_tokens;
}

int64_t rein_model_response_cached_tokens(const rein_model_response *r)
{
    return r->cached_tokens;
}

int64_t rein_model_response_cache_write_tokens(const rein_model_response *r)
{
    return r->cache_write_tokens;
}

int64_t rein_model_response_reasoning_tokens(const rein_model_response *r)
{
    return r->reasoning_tokens;
}

const char *rein_model_response_model(const rein_model_response *r)
{
    return r->answer_model;
}

const char *rein_model_response_id(const rein_model_response *r)
{
    return r->answer_id;
}

size_t rein_model_response_call_count(const rein_model_response *r)
{
    return r->ncalls;
}

const rein_model_call *rein_model_response_call(const rein_model_response *r, size_t i)
{
    return i < r->ncalls ? r->calls[i] : NULL;
}

const json_t *rein_model_response_error(const rein_model_response *r)
{
    return r->error;
}

const json_t *rein_model_response_thinking_blocks(const rein_model_response *r)
{
    return r->thinking_blocks;
}

const json_t *rein_model_response_server_blocks(const rein_model_response *r)
{
    return r->server_blocks;
}

const json_t *rein_model_response_logprobs(const rein_model_response *r)
{
    return r->logprobs;
}

const json_t *rein_model_response_annotations(const rein_model_response *r)
{
    return r->annotations;
}

const json_t *rein_model_response_text_blocks(const rein_model_response *r)
{
    return r->text_blocks;
}

int64_t rein_model_response_retry_after_ms(const rein_model_response *r)
{
    return r->retry_after_ms;
}

const rein_model_headers *rein_model_response_headers(const rein_model_response *r)
{
    return &r->headers;
}

const char *rein_model_response_request_id(const rein_model_response *r)
{
    const char *id = r->request_id;

    if (!id)
        id = rein_model_headers_get(&r->headers, "request-id");
    return id ? id : rein_model_headers_get(&r->headers, "x-request-id");
}

bool rein_model_response_is_complete(const rein_model_response *r)
{
    return r->complete;
}

size_t rein_model_response_text_call_count(const rein_model_response *r)
{
    return r->text_calls;
}

static int set_str(json_t *o, const char *key, const char *s, size_t len)
{
    return json_object_set_new(o, key, json_stringn(s, len));
}

static int set_tokens(json_t *o, const char *key, int64_t v)
{
    return json_object_set_new(o, key, v >= 0 ? json_integer(v) : json_null());
}

/* jansson rejects strings that are not UTF-8; the writer has already cleaned them, so go
 * through it for text that came off the network. */
static json_t *str_value(const char *s, size_t len)
{
    json_t *v = json_stringn(s, len);
    struct rein_buf b;
    struct rein_jw w;

    if (v)
        return v;
    rein_buf_init(&b, 0);
    rein_jw_init(&w, &b);
    rein_jw_strn(&w, s, len);
    if (rein_jw_finish(&w) == REIN_OK)
        v = rein_json_parse(b.ptr, b.len, 0, NULL);
    rein_buf_release(&b);
    return v;
}

json_t *rein_model_response_to_json(const rein_model_response *r)
{
    json_t *o = json_object(), *calls = json_array(), *usage = json_object();
    int bad = !o || !calls || !usage;

    bad |= json_object_set_new(o, "text", str_value(r->text.ptr, r->text.len));
    for (size_t i = 0; !bad && i < r->ncalls; i++) {
        const rein_model_call *c = r->calls[i];
        json_t *jc = json_object();
        bad |= !jc || json_array_append_new(calls, jc);
        if (bad)
            break;
        bad |= set_str(jc, "id", c->id, strlen(c->id));
        bad |= json_object_set_new(jc, "name", str_value(c->name.ptr, c->name.len));
        const json_t *args = rein_model_call_arguments(c);
        bad |=
            json_object_set_new(jc, "arguments", args ? json_incref((json_t *)args) : json_null());
        bad |= json_object_set_new(jc, "raw_arguments", str_value(c->args.ptr, c->args.len));
        bad |=
            json_object_set_new(jc, "status", json_string(rein_model_call_status_name(c->status)));
        bad |= json_object_set_new(jc, "from_text", json_boolean(c->from_text));
    }
    bad |= json_object_set_new(o, "tool_calls", calls);
    calls = NULL;
    bad |= json_object_set_new(o, "finish_reason",
                               r->finish_reason ? json_string(r->finish_reason) : json_null());
    bad |= set_tokens(usage, "input_tokens", r->input_tokens);
    bad |= set_tokens(usage, "output_tokens", r->output_tokens);
    if (r->cached_tokens >= 0)
        bad |= set_tokens(usage, "cached_tokens", r->cached_tokens);
    if (r->reasoning_tokens >= 0)
        bad |= set_tokens(usage, "reasoning_tokens", r->reasoning_tokens);
    bad |= json_object_set_new(o, "usage", usage);
    usage = NULL;
    bad |= json_object_set_new(o, "reasoning",
                               r->reasoning.len ? str_value(r->reasoning.ptr, r->reasoning.len)
                                                : json_null());
    bad |= json_object_set_new(
        o, "refusal", r->refusal.len ? str_value(r->refusal.ptr, r->refusal.len) : json_null());
    bad |= json_object_set_new(o, "error", r->error ? json_incref(r->error) : json_null());
    if (bad) {
        json_decref(o);
        json_decref(calls);
        json_decref(usage);
        return NULL;
    }
    return o;
}

json_t *rein_model_response_message(const rein_model_response *r)
{
    json_t *m = json_object();
    int bad = !m;

    bad |= m && json_object_set_new(m, "role", json_string("assistant"));
    bad |= m && json_object_set_new(m, "content", str_value(r->text.ptr, r->text.len));
    if (!bad && r->ncalls) {
        json_t *calls = json_array();
        bad |= !calls || json_object_set_new(m, "tool_calls", calls);
        for (size_t i = 0; !bad && i < r->ncalls; i++) {
            const rein_model_call *c = r->calls[i];
            json_t *jc = json_object();
            bad |= !jc || json_array_append_new(calls, jc);
            if (bad)
                break;
            bad |= set_str(jc, "id", c->id, strlen(c->id));
            bad |= json_object_set_new(jc, "name", str_value(c->name.ptr, c->name.len));
            bad |= json_object_set_new(jc, "arguments", str_value(c->args.ptr, c->args.len));
            if (c->signature)
                bad |= json_object_set_new(jc, "signature", json_string(c->signature));
            if (c->custom)
                bad |= json_object_set_new(jc, "custom", json_true());
        }
    }
    if (!bad && r->reasoning.len)
        bad |= json_object_set_new(m, "reasoning", str_value(r->reasoning.ptr, r->reasoning.len));
    if (!bad && r->signature.len)
        bad |= json_object_set_new(m, "reasoning_signature",
                                   str_value(r->signature.ptr, r->signature.len));
    if (!bad && r->redacted)
        bad |= json_object_set_new(m, "redacted_reasoning", json_deep_copy(r->redacted));
    if (!bad && r->refusal.len)
        bad |= json_object_set_new(m, "refusal", str_value(r->refusal.ptr, r->refusal.len));
    if (!bad && r->server_blocks)
        bad |= json_object_set_new(m, "server_blocks", json_deep_copy(r->server_blocks));
    if (!bad && r->thinking_blocks)
        bad |= json_object_set_new(m, "thinking_blocks", json_deep_copy(r->thinking_blocks));
    if (!bad && r->reasoning_details)
        bad |= json_object_set_new(m, "reasoning_details", json_deep_copy(r->reasoning_details));
    if (!bad && r->reasoning_items)
        bad |= json_object_set_new(m, "reasoning_items", json_deep_copy(r->reasoning_items));
    if (!bad && r->response_id)
        bad |= json_object_set_new(m, "response_id", json_string(r->response_id));
    if (bad) {
        json_decref(m);
        return NULL;
    }
    return m;
}
