/*
 * Fuzz target for the gateway's client-facing request parsers (src/gateway/openai.c,
 * src/gateway/anthropic.c, src/gateway/responses.c, src/gateway/gemini.c and the token count
 * bodies of src/gateway/count.c): the first byte picks the wire (bit 7 set: a token count's
 * body, of Gemini's route when bit 6 is, the Responses API's when bit 2 is, else Anthropic's,
 * also written as a Bedrock upstream's CountTokens body; else bit 6 set: Gemini's generateContent, with an upstream of its wire when bit 1 is; else
 * bit 2 set: the Responses API, read as the chat completions body it means, with kept
 * responses to refer to when bit 3 is set, an upstream of the Responses wire when bit 4 is
 * (hosted tools are only kept for it) and run in the background when bit 5 is; else even:
 * OpenAI chat completions, odd: Anthropic messages, and a chat body's members bound for a
 * Responses upstream when bit 4 is set), the rest is the request body as a client sent it. A
 * Responses body converts to a chat completions body the OpenAI parser reads, or is refused
 * with a message, and what it holds beyond that is three lists of the right types. Nothing may
 * crash, leak or read out of bounds. A refused body names what is wrong, and the error body
 * the client would get for it (with the parameter it names, which comes from the input) is
 * valid JSON in the wire's shape. A parsed body has a conversation, tools with string names
 * and object or absent schemas, include_usage only on a stream, and tools whose bytes, when found
 * in the body, parse to the parsed tools. And when those bytes are tools the wire accepts (what
 * the tools cache holds), parsing the body with them known answers what the whole parse does;
 * and each wire's document path answers what its general path answers (gateway_same.h). A
 * reasoning ask read from a parsed body is an effort word or a positive budget, under a member
 * the body's dropped list names. A user's media, and those in a tool result (an Anthropic
 * tool_result's blocks, a Responses function_call_output's items, a Gemini functionResponse's
 * parts: decision 0098), read for an upstream of another wire (an Anthropic one, which takes
 * no audio: decision 0097) are attachments of the neutral shape, of the media the upstream
 * takes. A structured-output ask read from a parsed body (decision 0100) is refused in the wire's
 * error shape, or is a kind the neutral request takes, its schema an object that compiles or is
 * refused by name; and checking the body's own bytes as the answer against it says valid, or
 * names the problem and what the model is to fix.
 */
#include "gateway/gateway_int.h"
#include "providers/provider_int.h"

#include "gateway_same.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
static void check_output(const struct rein__gw_wire *wire, const struct rein__gw_req *r,
                         const char *answer, size_t len);

/* The error body must parse and carry the message (OpenAI: error.message; Anthropic:
 * {"type":"error","error":{"type","message"}}; Gemini: {"error":{"code","message","status"}},
 * the status word where the others have a type). */
static void check_error(const struct rein__gw_wire *wire, const struct rein__gw_bad *bad)
{
    struct rein__gw_err e;
    struct rein_buf out;
    json_t *doc, *err;

    memset(&e, 0, sizeof(e));
    e.status = 400;
    e.param = bad->param[0] ? bad->param : NULL;
    snprintf(e.message, sizeof(e.message), "%s", bad->msg);
    rein_buf_init(&out, REIN_BUF_DEFAULT_MAX);
    if (wire->error(&e, NULL, &out) != REIN_OK)
        abort();
    doc = rein_json_parse(out.ptr, out.len, 0, NULL);
    err = json_object_get(doc, "error");
    if (!json_is_object(err) || !json_is_string(json_object_get(err, "message")) ||
        !json_is_string(json_object_get(err, wire == &rein__gw_gemini ? "status" : "type")))
        abort();
    json_decref(doc);
    rein_buf_release(&out);
}

/* A provider of preset for model (key may be NULL), made once per slot and kept (reachable, so
 * no leak); aborts when it cannot be made. */
static rein_provider *kept_upstream(rein_provider **slot, const char *preset, const char *model,
                                    const char *key)
{
    rein_provider_config *cfg;

    if (*slot)
        return *slot;
    cfg = rein_provider_config_new();
    if (!cfg || rein_provider_config_set_provider(cfg, preset, NULL) ||
        rein_provider_config_set_model(cfg, model) ||
        (key && rein_provider_config_set_api_key(cfg, key)) ||
        rein_provider_config_set_base_url(cfg, "http://127.0.0.1:9"))
        abort();
    *slot = rein_provider_new(cfg, NULL);
    rein_provider_config_free(cfg);
    if (!*slot)
        abort();
    return *slot;
}

/* The upstream a request of another wire goes to: an Anthropic provider, which takes images
 * and PDFs in a user message but no audio. */
static const rein_provider *other_upstream(void)
{
    static rein_provider *p;

    return kept_upstream(&p, "anthropic", "m", NULL);
}

/* A user or tool message's attachments (decisions 0097, 0098) are of the neutral shape, base64,
 * of a media type the upstream takes, numbered from 1; a tool message has them only when read
 * for an upstream of another wire, or from a Responses body (whose tool outputs the chat wire
 * cannot hold as sent). */
static void check_attachments(const struct rein__gw_req *r, const json_t *msg)
{
    const json_t *atts = json_object_get(msg, "attachments");
    size_t i;
    json_t *a;

    const char *role = json_string_value(json_object_get(msg, "role"));

    if (json_array_size(atts) && (!role || (strcmp(role, "user") && strcmp(role, "tool")) ||
                                  (!strcmp(role, "tool") && r->verbatim && !r->tool_media)))
        abort();
    json_array_foreach(atts, i, a)
    {
        const char *type = json_string_value(json_object_get(a, "type"));
        const char *mime = json_string_value(json_object_get(a, "mime_type"));
        const char *data = json_string_value(json_object_get(a, "data"));
        if (!type || !mime || !data || !data[0] || strlen(data) % 4 ||
            json_integer_value(json_object_get(a, "index")) != (json_int_t)i + 1 ||
            (r->upstream && !rein_provider_takes_media(r->upstream, mime)))
            abort();
    }
}

static void check_parsed(const struct rein__gw_req *r)
{
    bool custom = false;

    if (!r->h || !json_is_object(r->passthrough))
        abort();
    /* A name is a string; whether it is a valid tool name (1-64 of A-Z a-z 0-9 _ -, so not
     * empty) is checked when the request's registry is made (check.c), which answers 400. */
    for (size_t i = 0; i < r->ntools; i++) {
        const struct rein__gw_tool *t = &r->tools[i];
        if (!t->name || (t->parameters && !json_is_object(t->parameters)))
            abort();
        /* a custom tool's declaration for a Responses upstream names it, in that API's type */
        custom |= t->custom;
        if (t->custom != (t->native != NULL) ||
            (t->native &&
             (strcmp(json_string_value(json_object_get(t->native, "type")), "custom") ||
              strcmp(json_string_value(json_object_get(t->native, "name")), t->name))))
            abort();
    }
    if (r->include_usage && !r->stream)
        abort();
    /* The tools' bytes found in the body (the tools cache's key) hold the parsed tools; a
     * custom tool's place in the tree holds the function it is offered as (decision 0089). */
    if (r->tools_raw && !custom) {
        json_t *t = rein_json_parse(r->tools_raw, r->tools_raw_len, 0, NULL);
        if (!r->tools_json || !json_equal(t, r->tools_json))
            abort();
        json_decref(t);
    }
    if (r->stop && !json_is_array(r->stop))
        abort();
    for (size_t i = 0; i < rein_history_len(r->h); i++) {
        if (!json_is_object(rein_history_get(r->h, i)))
            abort();
        check_attachments(r, rein_history_get(r->h, i));
    }
}

/* Parses body as r's wire does; with tools_at, the tools' bytes (n) count as known. */
static rein_err parse_as(const struct rein__gw_wire *wire, enum rein_gateway_api api,
                         struct rein__gw_req *r, const char *body, size_t len, const char *tools_at,
                         size_t n, bool verbatim, struct rein__gw_bad *bad)
{
    memset(bad, 0, sizeof(*bad));
    rein__gw_req_init(r, api);
    r->verbatim = verbatim;
    r->upstream = verbatim ? NULL : other_upstream();
    r->tool_media = wire == &rein__gw_responses; /* as the gateway sets it */
    if (tools_at) {
        r->tools_raw = tools_at;
        r->tools_raw_len = n;
        r->tools_known = true;
    }
    return wire->parse(r, body, len, bad);
}

/*
 * When the body's tools (found as written) are tools the wire accepts, which is when the
 * gateway's cache can hold them, a parse that takes them as known (and parses the rest
 * without them) answers what the whole parse answers: the same refusal, or the same request.
 */
static void check_known_tools(const struct rein__gw_wire *wire, enum rein_gateway_api api,
                              const char *body, size_t len, bool verbatim)
{
    const char *at;
    size_t n;
    struct rein__gw_req whole, known;
    struct rein__gw_bad wb, kb;
    struct rein_buf probe;
    rein_err wrc, krc;

    if (!rein__gw_raw_member(body, len, "tools", &at, &n) || at[0] != '[' || memchr(at, 0, n))
        return;
    rein_buf_init(&probe, 0);
    if (rein_buf_adds(&probe, api == REIN_GATEWAY_GEMINI
                                  ? "{\"contents\":[{\"parts\":[{\"text\":\"x\"}]}],\"tools\":"
                                  : "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":"
                                    "\"user\",\"content\":\"x\"}],\"tools\":") ||
        rein_buf_add(&probe, at, n) || rein_buf_addch(&probe, '}')) {
        rein_buf_release(&probe);
        return;
    }
    wrc = parse_as(wire, api, &whole, probe.ptr, probe.len, NULL, 0, verbatim, &wb);
    rein__gw_req_release(&whole);
    rein_buf_release(&probe);
    if (wrc != REIN_OK)
        return;
    wrc = parse_as(wire, api, &whole, body, len, NULL, 0, verbatim, &wb);
    krc = parse_as(wire, api, &known, body, len, at, n, verbatim, &kb);
    if (wrc == REIN_ENOMEM || krc == REIN_ENOMEM) {
        rein__gw_req_release(&whole);
        rein__gw_req_release(&known);
        return;
    }
    if (wrc != krc || strcmp(wb.param, kb.param) != 0 || strcmp(wb.msg, kb.msg) != 0) {
        fprintf(stderr, "tools known: %d (%s: %s), parsed: %d (%s: %s)\n", krc, kb.param, kb.msg,
                wrc, wb.param, wb.msg);
        abort();
    }
    if (wrc == REIN_OK &&
        (known.ntools || rein_history_len(whole.h) != rein_history_len(known.h) ||
         !json_equal(whole.passthrough, known.passthrough) || whole.stream != known.stream ||
         strcmp(whole.model ? whole.model : "", known.model ? known.model : "") != 0 ||
         !json_equal(whole.dropped, known.dropped) ||
         !json_equal(whole.unsupported, known.unsupported)))
        abort();
    rein__gw_req_release(&whole);
    rein__gw_req_release(&known);
}

/* Kept responses a body may refer to (bit 3 of the first byte): resp_f, whose items are
 * msg_in, msg_f and fc_f, and resp_g, which continues it. */
static struct rein__gw_kept *kept_store(void)
{
    static struct rein__gw_kept k;
    static bool made;
    json_t *in, *out;

    if (made)
        return &k;
    made = true;
    in = json_pack("[{s:s, s:s, s:s}]", "role", "user", "content", "hi", "id", "msg_in");
    out =
        json_pack("{s:s, s:[{s:s, s:s, s:s, s:[{s:s, s:s}]}, {s:s, s:s, s:s, s:s, s:s}]}", "object",
                  "response", "output", "type", "message", "id", "msg_f", "role", "assistant",
                  "content", "type", "output_text", "text", "ok", "type", "function_call", "id",
                  "fc_f", "call_id", "c_f", "name", "f", "arguments", "{}");
    if (rein__gw_kept_init(&k, 1 << 20, 1000LL * 3600) || !in || !out ||
        rein__gw_kept_put(&k, "", "resp_f", NULL, in, out) ||
        rein__gw_kept_put(&k, "", "resp_g", "resp_f", in, out))
        abort();
    json_decref(in);
    json_decref(out);
    return &k;
}

static void check_responses(const char *body, size_t len, bool verbatim, bool refs_kept,
                            bool responses_up, bool background)
{
    struct rein__gw_req r;
    struct rein__gw_bad bad;
    struct rein_buf chat;
    struct rein__gw_refs refs = {refs_kept ? kept_store() : NULL, "", background};
    json_t *extra = NULL;
    rein_err rc;

    memset(&bad, 0, sizeof(bad));
    rein_buf_init(&chat, 0);
    /* the upstream's wire decides what the chat body carries: the chat wire's, or another */
    rc = rein__gw_responses.convert(responses_up ? "openai-responses"
                                    : verbatim   ? "openai"
                                                 : "anthropic",
                                    &refs, body, len, &chat, &extra, &bad);
    if (rc == REIN_EINVAL) {
        if (!bad.msg[0])
            abort();
        check_error(&rein__gw_responses, &bad);
    } else if (rc == REIN_OK) {
        if (!json_is_object(json_object_get(extra, "passthrough")) ||
            !json_is_array(json_object_get(extra, "dropped")) ||
            !json_is_array(json_object_get(extra, "unsupported")) ||
            !json_is_boolean(json_object_get(extra, "store")) ||
            (json_object_get(extra, "background") && !background) ||
            (json_object_get(extra, "hosted_tools") &&
             (!responses_up || !json_array_size(json_object_get(extra, "hosted_tools")))))
            abort();
        rc = parse_as(&rein__gw_responses, REIN_GATEWAY_OPENAI, &r, chat.ptr, chat.len, NULL, 0,
                      verbatim, &bad);
        if (rc == REIN_OK) {
            check_parsed(&r);
            /* the gateway's passthrough holds what the conversion kept beside the chat body */
            if (json_object_update(r.passthrough, json_object_get(extra, "passthrough")) == 0)
                check_output(&rein__gw_responses, &r, body, len);
        } else if (rc == REIN_EINVAL && !bad.msg[0])
            abort();
        rein__gw_req_release(&r);
    } else if (rc != REIN_ENOMEM) {
        abort();
    }
    json_decref(extra);
    rein_buf_release(&chat);
}

/* Whether name is in the array of names list. */
static bool listed_in(const json_t *list, const char *name)
{
    size_t i;
    json_t *v;

    json_array_foreach(list, i, v)
    {
        if (strcmp(json_string_value(v), name) == 0)
            return true;
    }
    return false;
}

/* A chat request bound for a Responses upstream: what goes up in that wire's shape is an
 * object, and is neither dropped nor refused any more (bit 4 of the first byte). */
static void check_chat_to_responses(struct rein__gw_req *r)
{
    struct rein__gw_bad bad;
    json_t *members = NULL;
    const char *key;
    json_t *v;
    rein_err rc;

    memset(&bad, 0, sizeof(bad));
    rc = rein__gw_rs_chat_members(r, &members, &bad);
    if ((rc == REIN_EINVAL && !bad.msg[0]) || (rc && members) ||
        (members && !json_object_size(members)) || (rc && rc != REIN_EINVAL && rc != REIN_ENOMEM))
        abort();
    json_object_foreach(members, key, v)
    {
        if (listed_in(r->dropped, key) || listed_in(r->unsupported, key))
            abort();
    }
    if ((json_object_get(members, "reasoning") && listed_in(r->dropped, "reasoning_effort")) ||
        (json_object_get(json_object_get(members, "text"), "format") &&
         listed_in(r->unsupported, "response_format")))
        abort();
    json_decref(members);
}

/* A reasoning ask read from a parsed body (decision 0095) is a word or a positive budget, and
 * its member is one another wire would drop. */
static void check_reasoning(const struct rein__gw_wire *wire, const struct rein__gw_req *r)
{
    enum rein_reasoning effort;
    int64_t budget;
    const char *name = rein__gw_reasoning_ask(wire, r->passthrough, &effort, &budget);

    if (!name)
        return;
    if ((effort == REIN_REASONING_UNSET && budget <= 0) || budget < 0 ||
        (effort != REIN_REASONING_UNSET && !rein_reasoning_word(effort)))
        abort();
    /* an output_config with more than its effort is refused whole, not dropped */
    if (!listed_in(r->dropped, name) &&
        !(strcmp(name, "output_config") == 0 && listed_in(r->unsupported, name)))
        abort();
}

/* The structured-output ask of a parsed body (decision 0100), and the body's own bytes
 * checked against it as if they were the model's answer. */
static void check_output(const struct rein__gw_wire *wire, const struct rein__gw_req *r,
                         const char *answer, size_t len)
{
    struct rein__gw_output o;
    struct rein__gw_bad bad;
    rein_model_request *m;
    json_t *problem = NULL;
    char *reask = NULL;
    rein_err rc;

    memset(&o, 0, sizeof(o));
    memset(&bad, 0, sizeof(bad));
    rc = rein__gw_output_read(wire, r->passthrough, &o, &bad);
    if (rc == REIN_OK)
        rc = rein__gw_output_compile(&o, &bad);
    if (rc == REIN_EINVAL) {
        if (!bad.msg[0])
            abort();
        check_error(wire, &bad);
        rein__gw_output_release(&o);
        return;
    }
    if (rc != REIN_OK && rc != REIN_ENOMEM)
        abort();
    if (rc == REIN_OK && o.kind != REIN_OUTPUT_TEXT) {
        if (!o.member ||
            (o.kind == REIN_OUTPUT_JSON_SCHEMA && (!json_is_object(o.schema) || !o.compiled)))
            abort();
        m = rein_model_request_new();
        if (m && rein_model_request_set_output_format(m, o.kind, o.name[0] ? o.name : NULL,
                                                      o.schema, o.strict) == REIN_EINVAL)
            abort();
        rein_model_request_free(m);
        rc = rein__gw_output_check(&o, answer, len, &problem, &reask);
        if (rc == REIN_OK && problem &&
            (!reask || !reask[0] ||
             strcmp(json_string_value(json_object_get(problem, "code")), "invalid_output") != 0 ||
             !json_is_array(json_object_get(problem, "errors"))))
            abort();
        if (rc == REIN_OK && !problem && (reask || len == 0))
            abort();
        json_decref(problem);
        rein_free(reask);
    }
    rein__gw_output_release(&o);
}

/* Gemini's parser (it has no document path): the same checks as the others', and its
 * generationConfig and rest as the lists and the passthrough object they go to. */
static void check_gemini(const char *body, size_t len, bool verbatim)
{
    struct rein__gw_req r;
    struct rein__gw_bad bad;
    rein_err rc =
        parse_as(&rein__gw_gemini, REIN_GATEWAY_GEMINI, &r, body, len, NULL, 0, verbatim, &bad);

    if (rc == REIN_OK) {
        check_parsed(&r);
        if (!json_is_array(r.dropped) || !json_is_array(r.unsupported) ||
            (r.tool_choice && !r.tool_choice[0]))
            abort();
        check_reasoning(&rein__gw_gemini, &r);
        check_output(&rein__gw_gemini, &r, body, len);
    } else if (rc == REIN_EINVAL) {
        if (!bad.msg[0])
            abort();
        check_error(&rein__gw_gemini, &bad);
    } else if (rc != REIN_ENOMEM) {
        abort();
    }
    rein__gw_req_release(&r);
    check_known_tools(&rein__gw_gemini, REIN_GATEWAY_GEMINI, body, len, verbatim);
}

/* An Anthropic count's body: parsed as a messages body that needs no max_tokens. */
static void check_anthropic_count(const char *body, size_t len)
{
    struct rein__gw_req r;
    struct rein__gw_bad bad;
    rein_err rc;

    memset(&bad, 0, sizeof(bad));
    rein__gw_req_init(&r, REIN_GATEWAY_ANTHROPIC);
    r.count = true;
    rc = rein__gw_anthropic.parse(&r, body, len, &bad);
    if (rc == REIN_OK) {
        check_parsed(&r);
        if (r.max_tokens < 0)
            abort();
    } else if (rc == REIN_EINVAL) {
        if (!bad.msg[0])
            abort();
        check_error(&rein__gw_anthropic, &bad);
    } else if (rc != REIN_ENOMEM) {
        abort();
    }
    rein__gw_req_release(&r);
}

/* A Bedrock upstream (an API key, so no AWS credentials are looked for). */
static rein_provider *bedrock_upstream(void)
{
    static rein_provider *p;

    return kept_upstream(&p, "bedrock", "anthropic.claude-m-v1:0", "k");
}

/* Whether every member of o is one of names. */
static bool members_in(const json_t *o, const char *const *names)
{
    const char *key;
    json_t *v;

    json_object_foreach((json_t *)o, key, v)
    {
        bool found = false;
        for (size_t i = 0; names[i] && !found; i++)
            found = strcmp(key, names[i]) == 0;
        if (!found)
            return false;
    }
    return true;
}

/*
 * A parsed count bound for a Bedrock upstream: the body the provider writes for its
 * CountTokens (the Converse writer's, cut) is one JSON object {"input": {"converse": {...}}}
 * whose converse holds only ConverseTokensRequest's members, the messages an array (or the
 * request is refused, as a send of it would be).
 */
static void check_bedrock_count_body(const struct rein__gw_req *r)
{
    static const char *const top[] = {"input", NULL}, *const input[] = {"converse", NULL};
    static const char *const converse[] = {"messages", "system", "toolConfig",
                                           "additionalModelRequestFields", NULL};
    rein_model_request *m = rein_model_request_new();
    char *text = NULL;
    json_t *doc, *c;
    rein_error err;
    rein_err rc = m ? REIN_OK : REIN_ENOMEM;

    for (size_t i = 0; !rc && i < r->ntools; i++)
        rc = rein_model_request_add_tool(m, r->tools[i].name, r->tools[i].description,
                                         r->tools[i].parameters);
    if (!rc && r->tool_choice)
        rc = rein_model_request_set_tool_choice(m, r->tool_choice);
    if (!rc)
        rc = rein__provider_count_body(bedrock_upstream(), m, r->h, &text, &err);
    if (rc == REIN_OK) {
        doc = rein_json_parse(text, strlen(text), 0, NULL);
        c = json_object_get(json_object_get(doc, "input"), "converse");
        if (!json_is_object(doc) || !members_in(doc, top) ||
            !members_in(json_object_get(doc, "input"), input) || !json_is_object(c) ||
            !members_in(c, converse) ||
            (json_object_get(c, "messages") && !json_is_array(json_object_get(c, "messages"))) ||
            json_object_get(c, "inferenceConfig"))
            abort();
        json_decref(doc);
    }
    rein_free(text);
    rein_model_request_free(m);
}

/* A count's body as its route reads it (a Responses body converted for a Bedrock upstream
 * first), parsed for a Bedrock upstream and written for its CountTokens. */
static void check_count_to_bedrock(enum rein_gateway_api api, const struct rein__gw_wire *wire,
                                   const char *body, size_t len)
{
    struct rein__gw_refs refs = {NULL, "", false};
    struct rein__gw_req r;
    struct rein__gw_bad bad;
    struct rein_buf chat;
    json_t *extra = NULL;
    rein_err rc = REIN_OK;

    memset(&bad, 0, sizeof(bad));
    rein_buf_init(&chat, 0);
    if (api == REIN_GATEWAY_RESPONSES) {
        rc = rein__gw_responses.convert("bedrock", &refs, body, len, &chat, &extra, &bad);
        body = chat.ptr;
        len = chat.len;
    }
    rein__gw_req_init(&r, api == REIN_GATEWAY_RESPONSES ? REIN_GATEWAY_OPENAI : api);
    r.count = true;
    r.upstream = bedrock_upstream();
    if (!rc && wire->parse(&r, body, len, &bad) == REIN_OK)
        check_bedrock_count_body(&r);
    rein__gw_req_release(&r);
    json_decref(extra);
    rein_buf_release(&chat);
}

/*
 * A token count's body (bit 7 of the first byte; bit 6 Gemini's, bit 2 the Responses API's,
 * else Anthropic's, decision 0094): read as the body of its wire's generate route (Gemini's
 * generateContentRequest unwrapped) or refused in the route's error shape, then parsed by that
 * route's parser; the count a Bedrock upstream would be asked has CountTokens' shape; and the
 * count answered in the wire's shape is JSON holding the number.
 */
static void check_count(uint8_t bits, const char *body, size_t len)
{
    enum rein_gateway_api api = (bits & 64)  ? REIN_GATEWAY_GEMINI
                                : (bits & 4) ? REIN_GATEWAY_RESPONSES
                                             : REIN_GATEWAY_ANTHROPIC;
    const struct rein__gw_wire *wire = (bits & 64)  ? &rein__gw_gemini
                                       : (bits & 4) ? &rein__gw_responses
                                                    : &rein__gw_anthropic;
    struct rein__gw_bad bad;
    struct rein_buf text, answer;
    json_t *doc;
    rein_err rc;

    memset(&bad, 0, sizeof(bad));
    rein_buf_init(&text, 0);
    rc = rein__gw_count_body(api, body, len, &text, &bad);
    if (rc == REIN_EINVAL) {
        if (!bad.msg[0])
            abort();
        check_error(wire, &bad);
    } else if (rc == REIN_OK && api == REIN_GATEWAY_GEMINI) {
        check_gemini(text.ptr, text.len, false);
    } else if (rc == REIN_OK && api == REIN_GATEWAY_RESPONSES) {
        check_responses(text.ptr, text.len, false, (bits & 8) != 0, false, false);
    } else if (rc == REIN_OK) {
        check_anthropic_count(text.ptr, text.len);
    } else if (rc != REIN_ENOMEM) {
        abort();
    }
    if (rc == REIN_OK)
        check_count_to_bedrock(api, wire, text.ptr, text.len);
    rein_buf_release(&text);
    rein_buf_init(&answer, 0);
    if (rein__gw_count_answer(api, (int64_t)len, &answer) == REIN_OK) {
        doc = rein_json_parse(answer.ptr, answer.len, 0, NULL);
        if (!doc || json_integer_value(json_object_get(
                        doc, api == REIN_GATEWAY_GEMINI ? "totalTokens" : "input_tokens")) !=
                        (json_int_t)len)
            abort();
        json_decref(doc);
    }
    rein_buf_release(&answer);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const struct rein__gw_wire *wire;
    struct rein__gw_req r;
    struct rein__gw_bad bad;
    rein_err rc;

    if (size < 1)
        return 0;
    if (data[0] & 128) {
        check_count(data[0], (const char *)data + 1, size - 1);
        return 0;
    }
    if (data[0] & 64) {
        check_gemini((const char *)data + 1, size - 1, (data[0] & 2) != 0);
        return 0;
    }
    if (data[0] & 4) {
        check_responses((const char *)data + 1, size - 1, (data[0] & 2) != 0, (data[0] & 8) != 0,
                        (data[0] & 16) != 0, (data[0] & 32) != 0);
        return 0;
    }
    wire = (data[0] & 1) ? &rein__gw_anthropic : &rein__gw_openai;
    memset(&bad, 0, sizeof(bad));
    rein__gw_req_init(&r, (data[0] & 1) ? REIN_GATEWAY_ANTHROPIC : REIN_GATEWAY_OPENAI);
    r.verbatim = (data[0] & 2) != 0; /* an upstream of the client's wire */
    r.upstream = r.verbatim ? NULL : other_upstream();
    rc = wire->parse(&r, (const char *)data + 1, size - 1, &bad);
    if (rc == REIN_OK) {
        check_parsed(&r);
        check_reasoning(wire, &r);
        check_output(wire, &r, (const char *)data + 1, size - 1);
        if (wire == &rein__gw_openai && !r.verbatim && (data[0] & 16))
            check_chat_to_responses(&r);
    } else if (rc == REIN_EINVAL) {
        if (!bad.msg[0])
            abort();
        check_error(wire, &bad);
    } else if (rc != REIN_ENOMEM)
        abort();
    rein__gw_req_release(&r);
    check_known_tools(wire, (data[0] & 1) ? REIN_GATEWAY_ANTHROPIC : REIN_GATEWAY_OPENAI,
                      (const char *)data + 1, size - 1, (data[0] & 2) != 0);
    if (!gw_paths_agree((data[0] & 1) ? REIN_GATEWAY_ANTHROPIC : REIN_GATEWAY_OPENAI,
                        (const char *)data + 1, size - 1, (data[0] & 2) != 0))
        abort();
    return 0;
}
