/*
 * The rules provider (issue 4 item 8; option B of 004_168e21e9a946f9f0.txt): a backend that
 * answers like a model without one. It routes simple, explicit requests straight to a tool
 * with the "routes" of the offered tools' manifests (PCRE2 patterns with named captures, in
 * English and Chinese), and composes the final answer from the tool results.
 *
 * It is a provider, not a second way to run tools: it proposes tool calls in an ordinary
 * response, which the agent runs through the one pipeline and records in the ledger like any
 * model's calls. It keeps no state: every send reads the history. After the last user message
 * it counts the calls it already made and the results that came back:
 *
 *   "A, then B" / "A，然后B"  the message is split on sequence words (then, and then, after
 *                             that, 然后, 接着, 随后) when every part routes; otherwise the
 *                             whole message is routed as one request
 *   next part                 one call per reply, in order, so a later part runs after the
 *                             earlier one succeeded
 *   all parts done, or a      the answer: each result rendered in the user's language
 *   call failed               (Chinese when the message has CJK characters)
 *   nothing routes            finish reason "unroutable" and a text that says how to
 *                             configure a model provider (the agent's fast path reads the
 *                             finish reason and asks the model instead)
 *
 * Captured text is coerced to the types of the tool's parameter schema: integers, numbers,
 * booleans, JSON arrays and objects (a bare list "1, 2, 3" becomes an array when the schema
 * wants one), and enums, where a manifest may map words to members with
 * "x-route-aliases": {"op": {"平均值": "mean", "average": "mean"}}. A capture that cannot be
 * coerced makes its route not apply.
 */
#include "provider_int.h"

#include <rein/tools.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <pcre2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_PARTS      8
#define RENDER_MAX     2000
#define MATCHES_SHOWN  10
#define FINISH_ROUTED  "tool_calls"
#define FINISH_ANSWER  "stop"
#define FINISH_NOROUTE "unroutable"

/* ---- splitting "A, then B" ---- */

static pcre2_code *split_re;
static pthread_once_t split_once = PTHREAD_ONCE_INIT;

static void split_compile(void)
{
    static const char pattern[] =
        "\\s*[,，;；。]?\\s*(?:\\band\\s+then\\b|\\bthen\\b|\\bafter\\s+that\\b|\\bafterwards\\b|"
        "然后|接着|随后)\\s*[,，]?\\s*";
    int code;
    PCRE2_SIZE off;

    split_re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
                             PCRE2_UTF | PCRE2_UCP | PCRE2_CASELESS, &code, &off, NULL);
}

struct part {
    const char *p;
    size_t len;
};

static bool is_trim(unsigned char c)
{
    return isspace(c) != 0;
}

static struct part trimmed(const char *p, size_t len)
{
    while (len && is_trim((unsigned char)*p)) {
        p++;
        len--;
    }
    while (len && is_trim((unsigned char)p[len - 1]))
        len--;
    return (struct part){p, len};
}

/* Splits text on sequence words. Returns the number of parts (1 when there is no split). */
static size_t split_parts(const char *text, size_t len, struct part *parts, size_t max)
{
    pcre2_match_data *md;
    size_t n = 0, start = 0;

    pthread_once(&split_once, split_compile);
    md = split_re ? pcre2_match_data_create(4, NULL) : NULL;
    while (md && n + 1 < max) {
        int rc = pcre2_match(split_re, (PCRE2_SPTR)text, len, start, 0, md, NULL);
        PCRE2_SIZE *ov;
        if (rc < 0)
            break;
        ov = pcre2_get_ovector_pointer(md);
        if (ov[1] == ov[0] || ov[0] == 0) {
            /* A sequence word at the very start is not a split. */
            if (ov[1] >= len)
                break;
            start = ov[1] > start ? ov[1] : start + 1;
            continue;
        }
        parts[n++] = trimmed(text + start, ov[0] - start);
        start = ov[1];
    }
    pcre2_match_data_free(md);
    parts[n++] = trimmed(text + start, len - start);
    return n;
}

/* ---- coercing captures ---- */

static const char *schema_type(const json_t *schema)
{
    const json_t *t = json_object_get(schema, "type");
    size_t i;
    json_t *v;

    if (json_is_string(t))
        return json_string_value(t);
    json_array_foreach(t, i, v)
    {
        if (json_is_string(v) && strcmp(json_string_value(v), "null") != 0)
            return json_string_value(v);
    }
    return NULL;
}

/* An enum member for word: itself, case-insensitively, or through the manifest's aliases. */
static json_t *enum_member(const json_t *schema, const json_t *aliases, const char *word)
{
    const json_t *e = json_object_get(schema, "enum"), *v;
    const char *key;
    size_t i;

    json_array_foreach(e, i, v)
    {
        if (json_is_string(v) && strcasecmp(json_string_value(v), word) == 0)
            return json_incref((json_t *)v);
    }
    json_object_foreach((json_t *)aliases, key, v)
    {
        if (strcasecmp(key, word) == 0)
            return json_incref((json_t *)v);
    }
    return NULL;
}

/* Length of the list item at p: up to a space, ",", "]", "、" or "，". */
static size_t item_len(const char *p)
{
    size_t n = 0;

    while (p[n] && !isspace((unsigned char)p[n]) && p[n] != ',' && p[n] != ']' &&
           strncmp(p + n, "、", 3) != 0 && strncmp(p + n, "，", 3) != 0)
        n++;
    return n;
}

/* A bare list "1, 2, 3" / "1 2 3" / "1、2、3" as an array of numbers (or strings). */
static json_t *bare_list(const char *s, bool numbers)
{
    json_t *a = json_array();
    const char *p = s;

    while (a && *p) {
        size_t n;
        while (*p && (isspace((unsigned char)*p) || *p == ',' || *p == '[' || *p == ']'))
            p++;
        if (strncmp(p, "、", 3) == 0 || strncmp(p, "，", 3) == 0) {
            p += 3;
            continue;
        }
        if (!*p)
            break;
        /* "1, 2 and 3": the last separator of a list of numbers may be a word */
        if (numbers && strncasecmp(p, "and", 3) == 0 && isspace((unsigned char)p[3])) {
            p += 3;
            continue;
        }
        n = item_len(p); /* at least 1: p is not at a separator */
        if (numbers) {
            char *end;
            double d;
            errno = 0;
            d = strtod(p, &end);
            if (end != p + n || errno || !isfinite(d)) {
                json_decref(a);
                return NULL;
            }
            json_array_append_new(a, fabs(d) < 9.0e15 && d == floor(d) ? json_integer((json_int_t)d)
                                                                       : json_real(d));
        } else {
            json_array_append_new(a, json_stringn(p, n));
        }
        p += n;
    }
    if (a && json_array_size(a) == 0) {
        json_decref(a);
        return NULL;
    }
    return a;
}

/* The value of a capture for its parameter schema (new), or NULL when it does not fit. */
static json_t *coerce(const json_t *schema, const json_t *aliases, const char *s)
{
    const char *type = schema_type(schema);
    char *end;

    if (json_object_get(schema, "enum"))
        return enum_member(schema, aliases, s);
    if (!type || strcmp(type, "string") == 0)
        return json_string(s);
    if (strcmp(type, "integer") == 0) {
        long long v;
        errno = 0;
        v = strtoll(s, &end, 10);
        return end != s && !*end && !errno ? json_integer(v) : NULL;
    }
    if (strcmp(type, "number") == 0) {
        double d;
        errno = 0;
        d = strtod(s, &end);
        return end != s && !*end && !errno ? json_real(d) : NULL;
    }
    if (strcmp(type, "boolean") == 0) {
        static const char *const yes[] = {"true", "yes", "on", "1", "是", "对"};
        static const char *const no[] = {"false", "no", "off", "0", "否", "不"};
        for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
            if (strcasecmp(s, yes[i]) == 0)
                return json_true();
            if (strcasecmp(s, no[i]) == 0)
                return json_false();
        }
        return NULL;
    }
    if (strcmp(type, "array") == 0 || strcmp(type, "object") == 0) {
        json_t *v = rein_json_parse(s, strlen(s), 0, NULL);
        bool array = type[0] == 'a';
        if (v && (array ? json_is_array(v) : json_is_object(v)))
            return v;
        json_decref(v);
        if (array) {
            const char *it = schema_type(json_object_get(schema, "items"));
            return bare_list(s, it && (strcmp(it, "number") == 0 || strcmp(it, "integer") == 0));
        }
    }
    return NULL;
}

/* The arguments for tool from a route's captures, or NULL when one does not fit. */
static json_t *arguments(const rein_tool *tool, json_t *caps)
{
    const json_t *props = json_object_get(rein_tool_parameters(tool), "properties");
    const json_t *aliases = json_object_get(rein_tool_manifest(tool), "x-route-aliases");
    json_t *args = json_object(), *v;
    const char *key;

    json_object_foreach(caps, key, v)
    {
        struct part t = trimmed(json_string_value(v), json_string_length(v));
        char *s = rein_strndup(t.p, t.len);
        json_t *c =
            s ? coerce(json_object_get(props, key), json_object_get(aliases, key), s) : NULL;
        rein_free(s);
        if (!c || !args || json_object_set_new(args, key, c) != 0) {
            if (!args)
                json_decref(c); /* set_new takes c even when it fails, but not without args */
            json_decref(args);
            return NULL;
        }
    }
    return args;
}

struct route {
    const rein_tool *tool;
    json_t *args;
};

/* Routes one part among the offered tools; false when nothing fits. */
static bool route(const rein_model_request *req, struct part part, struct route *out)
{
    char *text = rein_strndup(part.p, part.len);
    bool found = false;

    for (size_t i = 0; text && i < req->ntools && !found; i++) {
        const rein_tool *tool = rein_registry_get(req->reg, req->tools[i].name);
        for (size_t r = 0; tool && r < rein_tool_route_count(tool) && !found; r++) {
            json_t *caps = NULL;
            if (rein_tool_route_match(tool, r, text, part.len, &caps, NULL) != REIN_OK)
                continue;
            out->args = arguments(tool, caps);
            json_decref(caps);
            if (out->args) {
                out->tool = tool;
                found = true;
            }
        }
    }
    rein_free(text);
    return found;
}

/* ---- what happened after the last user message ---- */

struct state {
    const char *message; /* the last user message */
    bool cjk;
    size_t calls_made; /* calls the replies after it made */
    json_t *results;   /* [{tool, content (parsed or string)}] in order; new */
    bool failed;       /* the last result was not a success */
};

static bool has_cjk(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        /* U+3000..U+9FFF and U+FF00..U+FFEF start with E3..E9 or EF BC..BF. */
        if (*p >= 0xE3 && *p <= 0xE9)
            return true;
        if (*p == 0xEF && (p[1] == 0xBC || p[1] == 0xBD))
            return true;
    }
    return false;
}

static bool result_ok(const json_t *content)
{
    return json_is_true(json_object_get(content, "ok")) ||
           (json_is_string(json_object_get(content, "status")) &&
            strcmp(json_string_value(json_object_get(content, "status")), "proposed") == 0);
}

static rein_err read_state(rein_history *h, struct state *st, rein_error *err)
{
    size_t n = rein_history_len(h), u = n;

    memset(st, 0, sizeof(st[0]));
    while (u-- > 0) {
        const json_t *m = rein_history_get(h, u);
        if (strcmp(rein__json_str(m, "role"), "user") == 0)
            break;
    }
    if (u >= n)
        return rein_error_set(err, REIN_EINVAL, "nothing to route: there is no user message");
    st->message = rein__json_str(rein_history_get(h, u), "content");
    st->cjk = has_cjk(st->message);
    st->results = json_array();
    if (!st->results)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    for (size_t i = u + 1; i < n; i++) {
        const json_t *m = rein_history_get(h, i);
        const char *role = rein__json_str(m, "role");
        if (strcmp(role, "assistant") == 0) {
            st->calls_made += json_array_size(json_object_get(m, "tool_calls"));
        } else if (strcmp(role, "tool") == 0) {
            const char *c = rein__json_str(m, "content");
            json_t *v = rein_json_parse(c, strlen(c), 0, NULL);
            if (!v)
                v = json_string(c);
            st->failed = !result_ok(v);
            json_array_append_new(st->results,
                                  json_pack("{s:s, s:o}", "tool", rein__json_str(m, "name"),
                                            "content", v ? v : json_null()));
        }
    }
    return REIN_OK;
}

/* ---- composing the answer ---- */

/* Text being composed; the first failed append is kept in rc (a failed append changes
 * nothing, so the text stays well-formed). */
struct text {
    struct rein_buf b;
    rein_err rc;
};

static void addn(struct text *t, const char *p, size_t n)
{
    rein_err rc = rein_buf_add(&t->b, p, n);

    if (rc && !t->rc)
        t->rc = rc;
}

static void adds(struct text *t, const char *s)
{
    addn(t, s, strlen(s));
}

static void addf(struct text *t, const char *fmt, ...) REIN_PRINTF(2, 3);
static void addf(struct text *t, const char *fmt, ...)
{
    va_list ap;
    rein_err rc;

    va_start(ap, fmt);
    rc = rein_buf_addvf(&t->b, fmt, ap);
    va_end(ap);
    if (rc && !t->rc)
        t->rc = rc;
}

static void add_value(struct text *b, const json_t *v)
{
    char *s;

    if (json_is_string(v)) {
        addn(b, json_string_value(v), json_string_length(v));
        return;
    }
    s = rein_json_dumps(v);
    if (!s)
        return;
    if (strlen(s) > RENDER_MAX) {
        addn(b, s, RENDER_MAX);
        adds(b, " …");
    } else {
        adds(b, s);
    }
    rein_free(s);
}

static void render_matches(struct text *b, const json_t *out, bool cjk)
{
    const json_t *matches = json_object_get(out, "matches"), *m;
    const char *query = rein__json_str(out, "query");
    json_int_t count = json_integer_value(json_object_get(out, "count"));
    size_t i;

    if (json_array_size(matches) == 0) {
        addf(b, cjk ? "没有找到包含“%s”的内容。" : "No matches for \"%s\".", query);
        return;
    }
    if (cjk)
        addf(b, "找到 %lld 处包含“%s”的内容：", (long long)count, query);
    else
        addf(b, "%lld match%s for \"%s\":", (long long)count, count == 1 ? "" : "es", query);
    json_array_foreach(matches, i, m)
    {
        if (i == MATCHES_SHOWN) {
            addf(b, cjk ? "\n  …（另有 %zu 处）" : "\n  … (%zu more)",
                 json_array_size(matches) - i);
            break;
        }
        addf(b, "\n  %s:%lld: %s", rein__json_str(m, "file"),
             (long long)json_integer_value(json_object_get(m, "line")), rein__json_str(m, "text"));
    }
}

/* One result in words. */
static void render(struct text *b, const char *tool, const json_t *content, bool cjk)
{
    const json_t *out = json_object_get(content, "output"), *res;

    if (json_is_string(content)) {
        add_value(b, content);
        return;
    }
    if (!json_is_true(json_object_get(content, "ok"))) {
        const json_t *e = json_object_get(content, "error");
        const char *msg = json_is_string(e) ? json_string_value(e) : rein__json_str(e, "message");
        if (result_ok(content))
            addf(b, cjk ? "%s：已提议，尚未执行。" : "%s: proposed, not run.", tool);
        else
            addf(b, cjk ? "%s 执行失败：%s" : "%s failed: %s", tool, msg);
        return;
    }
    if (json_object_get(out, "matches")) {
        render_matches(b, out, cjk);
        return;
    }
    res = json_object_get(out, "result");
    if (res && !json_is_object(res) && !json_is_array(res)) {
        if (json_is_string(json_object_get(out, "op")))
            addf(b, "%s = ", rein__json_str(out, "op"));
        else if (json_is_string(json_object_get(out, "expression")))
            addf(b, "%s = ", rein__json_str(out, "expression"));
        add_value(b, res);
        return;
    }
    add_value(b, out ? out : content);
}

static rein_err compose(const struct state *st, struct text *b)
{
    size_t n = json_array_size(st->results), i;
    json_t *r;

    json_array_foreach(st->results, i, r)
    {
        if (n > 1)
            addf(b, "%s%zu. ", i ? "\n" : "", i + 1);
        render(b, rein__json_str(r, "tool"), json_object_get(r, "content"), st->cjk);
    }
    return b->rc;
}

static void unroutable_text(const rein_model_request *req, const struct state *st, struct text *b)
{
    size_t shown = 0;

    if (st->cjk)
        addf(b, "没有配置模型时，我只能处理可以直接对应到工具的简单请求，无法处理“%s”。",
             st->message);
    else
        addf(b,
             "Without a model I can only handle simple requests that map straight "
             "to a tool, and \"%s\" is not one of them.",
             st->message);
    for (size_t i = 0; i < req->ntools; i++) {
        const rein_tool *t = req->reg ? rein_registry_get(req->reg, req->tools[i].name) : NULL;
        if (!t || rein_tool_route_count(t) == 0)
            continue;
        addf(b, "%s%s", shown++ ? ", " : (st->cjk ? " 可路由的工具：" : " Tools I can route to: "),
             rein_tool_id(t));
    }
    if (shown)
        adds(b, st->cjk ? "（例如 “echo hello”、“搜索 'calculator'”、“计算 [1,2,3] 的平均值”）。"
                        : " (for example \"echo hello\", \"search 'calculator'\", "
                          "\"calculate 2*(3+4)\").");
    adds(b, st->cjk
                ? "\n要让模型回答任何问题，请配置模型提供方：设置 REIN_PROVIDER 和 "
                  "REIN_MODEL（以及该提供方的 "
                  "API 密钥，例如 OPENAI_API_KEY、ANTHROPIC_API_KEY 或 DASHSCOPE_API_KEY），或使用 "
                  "--provider 和 --model 参数。"
                : "\nTo let a model answer anything, configure a provider: set REIN_PROVIDER and "
                  "REIN_MODEL (and the provider's API key, e.g. OPENAI_API_KEY, "
                  "ANTHROPIC_API_KEY or DASHSCOPE_API_KEY), or pass --provider and --model.");
}

/* ---- building the reply ---- */

static void emit(const rein_model_request *req, enum rein_model_event_type type, const char *text,
                 size_t len, const char *finish)
{
    struct rein_model_event ev;

    if (!req->fn)
        return;
    memset(&ev, 0, sizeof(ev));
    ev.type = type;
    ev.text = text;
    ev.len = len;
    ev.finish_reason = finish;
    if (type == REIN_MEV_USAGE)
        ev.input_tokens = ev.output_tokens = 0;
    req->fn(&ev, req->ud);
}

/* A reply with text only. */
static rein_err reply_text(const rein_model_request *req, const struct text *text,
                           const char *finish, rein_model_response **out)
{
    rein_model_response *r = rein__response_new(0);

    if (!r || text->rc || rein_buf_add(&r->text, text->b.ptr, text->b.len) != REIN_OK ||
        !(r->finish_reason = rein_strdup(finish))) {
        rein_model_response_free(r);
        return REIN_ENOMEM;
    }
    r->input_tokens = r->output_tokens = 0;
    r->complete = true;
    emit(req, REIN_MEV_TEXT_DELTA, r->text.ptr, r->text.len, NULL);
    emit(req, REIN_MEV_USAGE, NULL, 0, NULL);
    emit(req, REIN_MEV_FINISH, NULL, 0, finish);
    *out = r;
    return REIN_OK;
}

/* A reply with one tool call, through the assembler so its events and id are a model's. */
static rein_err reply_call(const rein_model_request *req, rein_history *h, const struct state *st,
                           const struct route *rt, rein_model_response **out)
{
    static const struct rein_decoder_options opt = {.keep_think_tags = true};
    rein_model_response *r = rein__response_new(0);
    struct rein__jstr finish = {FINISH_ROUTED, sizeof(FINISH_ROUTED) - 1, false};
    const char *name = rein_tool_id(rt->tool);
    char *args = rein_json_dumps(rt->args);
    struct rein__asm a;
    rein_err rc = REIN_ENOMEM;
    int idx;

    if (!r || !args) {
        rein_model_response_free(r);
        rein_free(args);
        return REIN_ENOMEM;
    }
    rein__asm_init(&a, r, &opt, req->fn, req->ud);
    /* Ids differ across turns and calls, and stay the same for the same history. */
    a.id_seed = rein__hash64(rein__hash64(rein_history_len(h), st->message, strlen(st->message)),
                             &st->calls_made, sizeof(st->calls_made));
    idx = rein__asm_call_whole(&a, name, strlen(name), args, strlen(args), false, true);
    if (idx >= 0 && rein__asm_call_close(&a, (size_t)idx) == REIN_OK &&
        rein__asm_finish_reason(&a, finish) == REIN_OK) {
        rein__asm_usage(&a, 0, 0);
        rein__asm_complete(&a);
        rc = rein__asm_end(&a);
    }
    rein__asm_release(&a);
    rein_free(args);
    if (rc) {
        rein_model_response_free(r);
        return rc;
    }
    *out = r;
    return REIN_OK;
}

static rein_err rules_send(rein_provider *p, rein_model_request *req, rein_history *h,
                           rein_model_response **out, rein_error *err)
{
    struct part parts[MAX_PARTS];
    struct route routes[MAX_PARTS];
    struct state st;
    struct text text = {.rc = REIN_OK};
    size_t nparts, nrouted = 0;
    bool none = req->tool_choice && strcmp(req->tool_choice, "none") == 0;
    rein_err rc;

    (void)p;
    if (rein_cancel_is_set(req->cancel))
        return rein_error_set(err, REIN_ECANCELED, "the request was cancelled: %s",
                              rein_cancel_reason(req->cancel));
    if (!h)
        return rein_error_set(err, REIN_EINVAL, "nothing to route: no history");
    rc = read_state(h, &st, err);
    if (rc)
        return rc;
    memset(routes, 0, sizeof(routes));
    rein_buf_init(&text.b, 0);
    nparts = split_parts(st.message, strlen(st.message), parts, MAX_PARTS);
    if (req->reg) {
        for (size_t i = 0; i < nparts && nrouted == i; i++) {
            if (route(req, parts[i], &routes[i]))
                nrouted++;
        }
        if (nrouted < nparts && nparts > 1) {
            /* Not every part routes: the message as a whole may still be one request. */
            for (size_t i = 0; i < nrouted; i++)
                json_decref(routes[i].args);
            memset(routes, 0, sizeof(routes));
            nparts = 1;
            parts[0] = trimmed(st.message, strlen(st.message));
            nrouted = route(req, parts[0], &routes[0]) ? 1 : 0;
        }
    }
    if (!none && nrouted == nparts && st.calls_made < nparts && !st.failed) {
        rc = reply_call(req, h, &st, &routes[st.calls_made], out);
    } else if (json_array_size(st.results) > 0 || st.calls_made > 0) {
        rc = compose(&st, &text);
        if (!rc)
            rc = reply_text(req, &text, FINISH_ANSWER, out);
    } else {
        unroutable_text(req, &st, &text);
        rc = reply_text(req, &text, FINISH_NOROUTE, out);
    }
    for (size_t i = 0; i < nrouted; i++)
        json_decref(routes[i].args);
    json_decref(st.results);
    rein_buf_release(&text.b);
    if (rc)
        return rein_error_set(err, rc, "the rules provider: %s", rein_strerror(rc));
    return REIN_OK;
}

const struct rein__wire rein__wire_rules = {
    .name = "rules",
    .send = rules_send,
};
