/*
 * What an external skill answered, read the same way for every runner that talks to another
 * program (process over stdin/stdout, HTTP): either a normalized result of its own
 * ({ok, output | error}), so a skill can report invalid_arguments or denied with details, or
 * just its output. Also helpers the built-in skills share: registration, regular expressions
 * from arguments, and number formatting.
 */
#include "skills_int.h"

#include <math.h>
#include <string.h>

void rein__skills_snippet(const char *text, size_t len, char *out, size_t max)
{
    size_t n = 0;

    if (max == 0)
        return;
    for (size_t i = 0; i < len && n + 1 < max; i++) {
        unsigned char c = (unsigned char)text[i];
        out[n++] = (c < 0x20 || c == 0x7f) ? ' ' : (char)c;
    }
    if (n < len && n > 0) {
        /* Cut before a UTF-8 sequence the limit split. */
        size_t k = n - 1;
        unsigned char lead;
        while (k > 0 && ((unsigned char)out[k] & 0xc0) == 0x80)
            k--;
        lead = (unsigned char)out[k];
        size_t need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
        if (k + need > n)
            n = k;
    }
    out[n] = '\0';
}

/* Copies the {path, message} items of a remote error's details that are well-formed. */
static json_t *copy_details(json_t *details)
{
    json_t *out = json_array(), *item;
    size_t i;

    if (!out || !json_is_array(details))
        return out;
    json_array_foreach(details, i, item)
    {
        const char *path = json_string_value(json_object_get(item, "path"));
        const char *msg = json_string_value(json_object_get(item, "message"));
        if (!msg)
            continue;
        if (json_array_append_new(
                out, json_pack("{s:s, s:s}", "path", path ? path : "", "message", msg))) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

rein_err rein__skills_read_reply(json_t *doc, struct rein_tool_reply *reply, rein_error *err)
{
    json_t *ok = json_object_get(doc, "ok");
    json_t *error;
    enum rein_call_code code;
    const char *msg, *code_text;

    if (!json_is_boolean(ok)) {
        reply->output = json_incref(doc);
        return REIN_OK;
    }
    if (json_is_true(ok)) {
        json_t *out = json_object_get(doc, "output");
        reply->output = out ? json_incref(out) : json_null();
        return REIN_OK;
    }
    error = json_object_get(doc, "error");
    code_text = json_string_value(json_object_get(error, "code"));
    msg = json_string_value(json_object_get(error, "message"));
    if (!msg)
        msg = json_string_value(error); /* {"ok": false, "error": "text"} */
    if (!code_text || !rein_call_code_parse(code_text, &code))
        code = REIN_CALL_EXECUTION_FAILED;
    reply->details = copy_details(json_object_get(error, "details"));
    return rein_error_set(err, rein_call_code_to_err(code), "%s",
                          msg && msg[0] ? msg : "the skill reported a failure without a message");
}

rein_err rein__skills_regex_compile(struct rein__skills_regex *re, const char *pattern,
                                    uint32_t options, const char *what, const char *path,
                                    struct rein_tool_reply *reply, rein_error *err)
{
    int errcode;
    PCRE2_SIZE off;

    memset(re, 0, sizeof(*re));
    re->what = what;
    re->path = path;
    re->code = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
                             options | PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_USE_OFFSET_LIMIT,
                             &errcode, &off, NULL);
    if (!re->code) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(errcode, msg, sizeof(msg));
        reply->details =
            json_pack("[{s:s, s:s}]", "path", path, "message", "not a valid regular expression");
        return rein_error_set(err, REIN_EINVALID,
                              "%s is not a valid regular expression: %s at offset %zu", what,
                              (const char *)msg, (size_t)off);
    }
    /* JIT is an optimisation; interpreting works when it is unavailable. */
    (void)pcre2_jit_compile(re->code, PCRE2_JIT_COMPLETE);
    re->md = pcre2_match_data_create_from_pattern(re->code, NULL);
    re->mctx = pcre2_match_context_create(NULL);
    if (!re->md || !re->mctx) {
        rein__skills_regex_free(re);
        return rein_error_set(err, REIN_ENOMEM, "out of memory compiling %s", what);
    }
    pcre2_set_match_limit(re->mctx, REIN__SKILLS_REGEX_MATCH_LIMIT);
    pcre2_set_depth_limit(re->mctx, REIN__SKILLS_REGEX_DEPTH_LIMIT);
    return REIN_OK;
}

int rein__skills_regex_find(struct rein__skills_regex *re, const char *subject, size_t len,
                            const struct rein_invocation *inv, struct rein_tool_reply *reply,
                            rein_error *err)
{
    /* Start positions tried per pcre2_match() call: the match limit bounds each of them, so
     * this bounds the time between two looks at the deadline. */
    const size_t window = 256;

    for (size_t start = 0;; start += window + 1) {
        rein_err rc = inv ? rein_invocation_check(inv, err) : REIN_OK;
        int m;
        if (rc)
            return rc;
        pcre2_set_offset_limit(re->mctx, start + window);
        m = pcre2_match(re->code, (PCRE2_SPTR)subject, len, start, 0, re->md, re->mctx);
        if (m >= 0)
            return 1;
        if (m == PCRE2_ERROR_MATCHLIMIT || m == PCRE2_ERROR_DEPTHLIMIT ||
            m == PCRE2_ERROR_HEAPLIMIT) {
            if (reply && !reply->details)
                reply->details = json_pack("[{s:s, s:s}]", "path", re->path, "message",
                                           "too expensive to match: simplify the expression");
            return rein_error_set(err, REIN_EINVALID,
                                  "%s is too expensive to match (PCRE2's %s limit was reached); "
                                  "simplify the regular expression (nested repetition such as "
                                  "(a+)+ backtracks exponentially)",
                                  re->what,
                                  m == PCRE2_ERROR_MATCHLIMIT   ? "match"
                                  : m == PCRE2_ERROR_DEPTHLIMIT ? "depth"
                                                                : "heap");
        }
        if (m != PCRE2_ERROR_NOMATCH)
            return rein_error_set(err, REIN_EINTERNAL, "matching %s failed (PCRE2 error %d)",
                                  re->what, m);
        if (start + window >= len)
            return 0;
    }
}

void rein__skills_regex_free(struct rein__skills_regex *re)
{
    pcre2_match_data_free(re->md);
    pcre2_match_context_free(re->mctx);
    pcre2_code_free(re->code);
    memset(re, 0, sizeof(*re));
}

json_t *rein__skills_json_number(double v)
{
    if (v == floor(v) && fabs(v) < 9007199254740992.0)
        return json_integer((json_int_t)v);
    return json_real(v);
}

rein_err rein__skills_register(rein_registry *reg, const char *manifest_text, rein_tool_fn fn,
                               void *userdata, void (*free_userdata)(void *userdata),
                               rein_error *err)
{
    json_t *m = rein_json_parse(manifest_text, strlen(manifest_text), 0, err);
    rein_err rc;

    if (!m) {
        if (free_userdata)
            free_userdata(userdata);
        return err ? err->code : REIN_EPARSE;
    }
    rc = rein_registry_add_builtin(reg, m, fn, userdata, free_userdata, err);
    json_decref(m);
    return rc;
}
