/*
 * Scenario replies of the scripted model server (model_server_int.h): checking a reply
 * object member by member, compiling what decides how it is served, and the match
 * predicates that pick a reply by what a request contains.
 *
 * A reply is checked completely before it joins a script, and unknown members are refused:
 * a misspelt "fautl" in a test would otherwise turn a fault test into a test that always
 * passes.
 */
#include "model_server_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

const char *ms__format_name(enum ms_format f)
{
    switch (f) {
    case MS_FMT_OPENAI:
        return "openai";
    case MS_FMT_ANTHROPIC:
        return "anthropic";
    case MS_FMT_OLLAMA:
        return "ollama";
    case MS_FMT_DASHSCOPE:
        return "dashscope";
    case MS_FMT_GEMINI:
        return "gemini";
    case MS_FMT_BEDROCK:
        return "bedrock";
    case MS_FMT_RESPONSES:
        return "responses";
    case MS_FMT_AUTO:
        return "auto";
    default:
        return "unknown";
    }
}

enum ms_format ms__format_parse(const char *name)
{
    static const enum ms_format all[] = {MS_FMT_AUTO,    MS_FMT_OPENAI,    MS_FMT_ANTHROPIC,
                                         MS_FMT_OLLAMA,  MS_FMT_DASHSCOPE, MS_FMT_GEMINI,
                                         MS_FMT_BEDROCK, MS_FMT_RESPONSES};

    for (size_t i = 0; name && i < REIN_ARRAY_SIZE(all); i++) {
        if (strcmp(name, ms__format_name(all[i])) == 0)
            return all[i];
    }
    return MS_FMT_UNKNOWN;
}

static bool ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), m = strlen(tail);

    return n >= m && strcmp(s + n - m, tail) == 0;
}

enum ms_format ms__format_of_path(const char *path)
{
    if (ends_with(path, "/chat/completions"))
        return MS_FMT_OPENAI;
    if (ends_with(path, "/v1/messages") || ms__vx_path(path))
        return MS_FMT_ANTHROPIC;
    if (strcmp(path, "/api/chat") == 0)
        return MS_FMT_OLLAMA;
    if (ends_with(path, "/services/aigc/text-generation/generation"))
        return MS_FMT_DASHSCOPE;
    if (strstr(path, "/models/") &&
        (ends_with(path, ":generateContent") || ends_with(path, ":streamGenerateContent")))
        return MS_FMT_GEMINI;
    if (strncmp(path, "/model/", 7) == 0 &&
        (ends_with(path, "/converse") || ends_with(path, "/converse-stream") ||
         ends_with(path, "/count-tokens")))
        return MS_FMT_BEDROCK;
    if (ends_with(path, "/responses"))
        return MS_FMT_RESPONSES;
    return MS_FMT_UNKNOWN;
}

/* ---- checking ------------------------------------------------------------------------ */

enum kind { K_STR, K_TEXT, K_BOOL, K_COUNT, K_OBJ, K_STRS, K_CALLS, K_ANY };

struct member {
    const char *name;
    enum kind kind;
};

static const struct member reply_members[] = {
    {"name", K_STR},
    {"format", K_STR},
    {"stream", K_BOOL},
    {"status", K_COUNT},
    {"headers", K_OBJ},
    {"delay_headers_ms", K_COUNT},
    {"delay_first_byte_ms", K_COUNT},
    {"delay_chunk_ms", K_COUNT},
    {"model", K_STR},
    {"id", K_STR},
    {"text", K_TEXT},
    {"reasoning", K_TEXT},
    {"signature", K_STR},
    {"redacted_thinking", K_STRS},
    {"refusal", K_TEXT},
    {"tool_calls", K_CALLS},
    {"usage", K_OBJ},
    {"finish_reason", K_STR},
    {"delta_bytes", K_COUNT},
    {"error", K_OBJ},
    {"body", K_STR},
    {"body_file", K_STR},
    {"content_type", K_STR},
    {"wrap_lines", K_STR},
    {"times", K_COUNT},
    {"match", K_OBJ},
    {"fault", K_OBJ},
};

static const struct member fault_members[] = {
    {"chunk_bytes", K_COUNT},       {"cut_after_bytes", K_COUNT},
    {"cut_after_events", K_COUNT},  {"malformed_after_events", K_COUNT},
    {"malformed", K_STR},           {"error_after_events", K_COUNT},
    {"error_event", K_OBJ},         {"hang", K_BOOL},
    {"hang_after_events", K_COUNT},
};

static const struct member match_members[] = {
    {"path", K_STR},          {"format", K_STR},
    {"model", K_STR},         {"nth", K_COUNT},
    {"stream", K_BOOL},       {"last_role", K_STR},
    {"last_contains", K_STR}, {"tool_result_contains", K_STR},
    {"tools_include", K_STR}, {"body_contains", K_STR},
};

/* "input" instead of "arguments": a custom tool's call (its free-form text), which the
 * Responses wire sends as a custom_tool_call. */
static const struct member call_members[] = {
    {"id", K_STR}, {"name", K_STR}, {"arguments", K_TEXT}, {"input", K_TEXT}};
static const struct member usage_members[] = {{"input_tokens", K_COUNT},
                                              {"output_tokens", K_COUNT},
                                              {"reasoning_tokens", K_COUNT},
                                              {"cached_tokens", K_COUNT},
                                              {"cache_write_tokens", K_COUNT}};
static const struct member error_members[] = {
    {"type", K_STR}, {"message", K_STR}, {"code", K_STR}, {"param", K_STR}};
static const struct member error_event_members[] = {
    {"type", K_STR}, {"message", K_STR}, {"code", K_STR}};

static const char *kind_text(enum kind k)
{
    switch (k) {
    case K_STR:
        return "a string";
    case K_TEXT:
        return "a string or an array of strings";
    case K_BOOL:
        return "true or false";
    case K_COUNT:
        return "a non-negative integer";
    case K_OBJ:
        return "an object";
    case K_STRS:
        return "an array of strings";
    case K_CALLS:
        return "an array of {id, name, arguments} objects";
    default:
        return "any value";
    }
}

static bool all_strings(const json_t *a)
{
    size_t i;
    json_t *v;

    if (!json_is_array(a))
        return false;
    json_array_foreach(a, i, v)
    {
        if (!json_is_string(v))
            return false;
    }
    return true;
}

static bool kind_ok(enum kind k, const json_t *v)
{
    switch (k) {
    case K_STR:
        return json_is_string(v);
    case K_TEXT:
        return json_is_string(v) || all_strings(v);
    case K_BOOL:
        return json_is_boolean(v);
    case K_COUNT:
        return json_is_integer(v) && json_integer_value(v) >= 0;
    case K_OBJ:
        return json_is_object(v);
    case K_STRS:
        return all_strings(v);
    case K_CALLS:
        return json_is_array(v);
    default:
        return true;
    }
}

/* Checks every member of obj against a table; where is the object's place ("replies[1]"). */
static rein_err check_members(const json_t *obj, const struct member *tab, size_t n,
                              const char *where, rein_error *err)
{
    const char *key;
    json_t *v;

    if (!json_is_object(obj))
        return rein_error_set(err, REIN_EINVAL, "%s: expected an object, got %s", where,
                              rein_json_type_name(obj));
    json_object_foreach((json_t *)obj, key, v)
    {
        size_t i;
        for (i = 0; i < n && strcmp(tab[i].name, key) != 0; i++)
            ;
        if (i == n) {
            char known[512] = "";
            size_t at = 0;
            for (size_t j = 0; j < n && at < sizeof(known); j++)
                at += (size_t)snprintf(known + at, sizeof(known) - at, "%s%s", j ? ", " : "",
                                       tab[j].name);
            return rein_error_set(err, REIN_EINVAL, "%s: unknown member \"%s\" (known: %s)", where,
                                  key, known);
        }
        if (!kind_ok(tab[i].kind, v))
            return rein_error_set(err, REIN_EINVAL, "%s.%s: expected %s, got %s", where, key,
                                  kind_text(tab[i].kind), rein_json_type_name(v));
    }
    return REIN_OK;
}

#define CHECK(obj, tab, where) check_members((obj), (tab), REIN_ARRAY_SIZE(tab), (where), err)

static rein_err check_calls(const json_t *calls, const char *where, rein_error *err)
{
    size_t i;
    json_t *c;
    rein_err rc;

    json_array_foreach(calls, i, c)
    {
        char at[96];
        snprintf(at, sizeof(at), "%s.tool_calls[%zu]", where, i);
        rc = CHECK(c, call_members, at);
        if (rc)
            return rc;
        if (!json_object_get(c, "name"))
            return rein_error_set(err, REIN_EINVAL, "%s: \"name\" is required", at);
    }
    return REIN_OK;
}

static rein_err check_headers(const json_t *h, const char *where, rein_error *err)
{
    const char *key;
    json_t *v;

    json_object_foreach((json_t *)h, key, v)
    {
        if (!json_is_string(v))
            return rein_error_set(err, REIN_EINVAL, "%s.headers.%s: expected a string, got %s",
                                  where, key, rein_json_type_name(v));
        if (strpbrk(key, "\r\n:") || strpbrk(json_string_value(v), "\r\n"))
            return rein_error_set(err, REIN_EINVAL, "%s.headers.%s: line breaks or ':' in a header",
                                  where, key);
    }
    return REIN_OK;
}

static rein_err check_sub(const json_t *parent, const char *key, const struct member *tab, size_t n,
                          const char *where, rein_error *err)
{
    const json_t *v = json_object_get(parent, key);
    char at[256];
    int len;

    if (!v)
        return REIN_OK;
    len = snprintf(at, sizeof(at), "%s.%s", where, key);
    if (len < 0 || (size_t)len >= sizeof(at))
        return rein_error_set(err, REIN_EINVAL, "%.100s….%s: the path is too long to report", where,
                              key);
    return check_members(v, tab, n, at, err);
}

#define CHECK_SUB(parent, key, tab)                                                                \
    check_sub((parent), (key), (tab), REIN_ARRAY_SIZE(tab), where, err)

static rein_err check_format_member(const json_t *obj, const char *where, rein_error *err)
{
    const char *name = json_string_value(json_object_get(obj, "format"));

    if (name && ms__format_parse(name) == MS_FMT_UNKNOWN)
        return rein_error_set(err, REIN_EINVAL,
                              "%s.format: \"%s\" is not one of auto, openai, anthropic, ollama, "
                              "dashscope, gemini, bedrock",
                              where, name);
    return REIN_OK;
}

static rein_err check_reply(const json_t *spec, const char *where, rein_error *err)
{
    const json_t *status = json_object_get(spec, "status");
    const json_t *calls = json_object_get(spec, "tool_calls");
    const json_t *headers = json_object_get(spec, "headers");
    const json_t *fault = json_object_get(spec, "fault");
    char at[128];
    rein_err rc = CHECK(spec, reply_members, where);

    if (!rc)
        rc = check_format_member(spec, where, err);
    if (!rc && status && (json_integer_value(status) < 100 || json_integer_value(status) > 599))
        rc = rein_error_set(err, REIN_EINVAL, "%s.status: %lld is not an HTTP status", where,
                            (long long)json_integer_value(status));
    if (!rc && calls)
        rc = check_calls(calls, where, err);
    if (!rc && headers)
        rc = check_headers(headers, where, err);
    if (!rc)
        rc = CHECK_SUB(spec, "usage", usage_members);
    if (!rc)
        rc = CHECK_SUB(spec, "error", error_members);
    if (!rc)
        rc = CHECK_SUB(spec, "match", match_members);
    if (!rc && json_object_get(spec, "match")) {
        snprintf(at, sizeof(at), "%s.match", where);
        rc = check_format_member(json_object_get(spec, "match"), at, err);
    }
    if (!rc)
        rc = CHECK_SUB(spec, "fault", fault_members);
    if (!rc && fault) {
        snprintf(at, sizeof(at), "%s.fault", where);
        rc = check_sub(fault, "error_event", error_event_members,
                       REIN_ARRAY_SIZE(error_event_members), at, err);
    }
    if (!rc && json_object_get(spec, "wrap_lines") &&
        strcmp(json_string_value(json_object_get(spec, "wrap_lines")), "sse") != 0)
        rc = rein_error_set(err, REIN_EINVAL, "%s.wrap_lines: the only value is \"sse\"", where);
    if (!rc && json_object_get(spec, "body") && json_object_get(spec, "body_file"))
        rc =
            rein_error_set(err, REIN_EINVAL, "%s: give \"body\" or \"body_file\", not both", where);
    return rc;
}

/* ---- compiling ----------------------------------------------------------------------- */

static long count_or(const json_t *obj, const char *key, long dflt)
{
    const json_t *v = json_object_get(obj, key);

    return json_is_integer(v) ? (long)json_integer_value(v) : dflt;
}

static char *dup_member(const json_t *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(obj, key));

    return s ? rein_strdup(s) : NULL;
}

static rein_err read_body_file(struct ms_reply *r, const char *file, const char *base_dir,
                               const char *where, rein_error *err)
{
    char path[4096];
    FILE *f;
    long n;

    if (file[0] == '/' || !base_dir)
        snprintf(path, sizeof(path), "%s", file);
    else
        snprintf(path, sizeof(path), "%s/%s", base_dir, file);
    f = fopen(path, "rb");
    if (!f)
        return rein_error_set(err, errno == ENOENT ? REIN_ENOTFOUND : REIN_EIO,
                              "%s.body_file: %s: %s", where, path, strerror(errno));
    n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (n < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return rein_error_set(err, REIN_EIO, "%s.body_file: %s: cannot size it", where, path);
    }
    r->body = rein_malloc((size_t)n + 1);
    if (!r->body) {
        fclose(f);
        return rein_error_set(err, REIN_ENOMEM, "%s.body_file: out of memory", where);
    }
    r->body_len = fread(r->body, 1, (size_t)n, f);
    r->body[r->body_len] = '\0';
    fclose(f);
    return REIN_OK;
}

static rein_err compile_fault(struct ms_reply *r, const json_t *fault)
{
    struct ms_fault *f = &r->fault;
    const char *malformed = json_string_value(json_object_get(fault, "malformed"));

    f->chunk_bytes = count_or(fault, "chunk_bytes", -1);
    f->cut_after_bytes = count_or(fault, "cut_after_bytes", -1);
    f->cut_after_events = count_or(fault, "cut_after_events", -1);
    f->malformed_after_events = count_or(fault, "malformed_after_events", -1);
    f->error_after_events = count_or(fault, "error_after_events", -1);
    f->hang_after_events = count_or(fault, "hang_after_events", -1);
    f->hang = json_is_true(json_object_get(fault, "hang"));
    f->error_event = json_object_get(fault, "error_event");
    f->malformed = rein_strdup(malformed ? malformed : "data: {\"broken\n\n");
    return f->malformed ? REIN_OK : REIN_ENOMEM;
}

rein_err ms__reply_compile(json_t *spec, const char *where, const char *base_dir,
                           struct ms_reply **out, rein_error *err)
{
    struct ms_reply *r;
    const char *file;
    rein_err rc = check_reply(spec, where, err);

    *out = NULL;
    if (rc)
        return rc;
    r = rein_calloc(1, sizeof(*r));
    if (!r)
        return rein_error_set(err, REIN_ENOMEM, "%s: out of memory", where);
    r->spec = json_incref(spec);
    r->refs = 1;
    r->format = ms__format_parse(json_string_value(json_object_get(spec, "format")));
    if (r->format == MS_FMT_UNKNOWN)
        r->format = MS_FMT_AUTO;
    r->stream = json_is_boolean(json_object_get(spec, "stream"))
                    ? json_is_true(json_object_get(spec, "stream"))
                    : -1;
    r->status = (int)count_or(spec, "status", 200);
    r->headers = json_object_get(spec, "headers");
    r->delay_headers_ms = count_or(spec, "delay_headers_ms", 0);
    r->delay_first_byte_ms = count_or(spec, "delay_first_byte_ms", 0);
    r->delay_chunk_ms = count_or(spec, "delay_chunk_ms", 0);
    r->delta_bytes = count_or(spec, "delta_bytes", 16);
    r->times = count_or(spec, "times", 1);
    r->match = json_object_get(spec, "match");
    r->name = dup_member(spec, "name");
    r->content_type = dup_member(spec, "content_type");
    r->wrap_sse = json_object_get(spec, "wrap_lines") != NULL;
    rc = compile_fault(r, json_object_get(spec, "fault"));
    if (rc) {
        rein_error_set(err, rc, "%s: out of memory", where);
        goto out_free;
    }
    if (json_is_string(json_object_get(spec, "body"))) {
        const json_t *b = json_object_get(spec, "body");
        r->body = rein_strndup(json_string_value(b), json_string_length(b));
        r->body_len = json_string_length(b);
        if (!r->body) {
            rc = rein_error_set(err, REIN_ENOMEM, "%s: out of memory", where);
            goto out_free;
        }
    }
    file = json_string_value(json_object_get(spec, "body_file"));
    if (file) {
        rc = read_body_file(r, file, base_dir, where, err);
        if (rc)
            goto out_free;
    }
    *out = r;
    return REIN_OK;

out_free:
    ms__reply_free(r);
    return rc;
}

void ms__reply_free(struct ms_reply *r)
{
    if (!r)
        return;
    json_decref(r->spec);
    rein_free(r->name);
    rein_free(r->body);
    rein_free(r->content_type);
    rein_free(r->fault.malformed);
    rein_free(r);
}

/* ---- matching ------------------------------------------------------------------------ */

static bool last_contains(const struct ms_req_view *v, const char *needle)
{
    char *text = ms__last_text(v->format, v->json);
    bool found = text && strstr(text, needle) != NULL;

    rein_free(text);
    return found;
}

static const char *match_str(const json_t *m, const char *key)
{
    return json_string_value(json_object_get(m, key));
}

/* The members that compare the request's identity: path, format, model, nth, stream. */
static bool matches_identity(const json_t *m, const struct ms_req_view *v)
{
    const char *path = match_str(m, "path");
    const char *format = match_str(m, "format");
    const json_t *model = json_object_get(m, "model");
    const json_t *nth = json_object_get(m, "nth");
    const json_t *stream = json_object_get(m, "stream");

    if (path && strcmp(path, v->path) != 0)
        return false;
    if (format && ms__format_parse(format) != v->format)
        return false;
    if (model && !json_equal(json_object_get(v->json, "model"), model))
        return false;
    if (nth && (size_t)json_integer_value(nth) != v->nth)
        return false;
    return !stream || json_is_true(stream) == v->stream;
}

/* The members that look into the conversation and the body. */
static bool matches_content(const json_t *m, const struct ms_req_view *v)
{
    const char *role = match_str(m, "last_role");
    const char *last = match_str(m, "last_contains");
    const char *result = match_str(m, "tool_result_contains");
    const char *tool = match_str(m, "tools_include");
    const char *body = match_str(m, "body_contains");

    if (role && strcmp(role, ms__last_role(v->format, v->json)) != 0)
        return false;
    if (last && !last_contains(v, last))
        return false;
    if (result && !ms__tool_result_contains(v->format, v->json, result))
        return false;
    if (tool && !ms__tools_include(v->format, v->json, tool))
        return false;
    return !body || memmem(v->body, v->body_len, body, strlen(body)) != NULL;
}

bool ms__reply_matches(const struct ms_reply *r, const struct ms_req_view *v)
{
    if (!r->match)
        return true;
    return matches_identity(r->match, v) && matches_content(r->match, v);
}
