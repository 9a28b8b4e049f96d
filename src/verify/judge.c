/*
 * The LLM judge's side of the contract (layer 5): the prompt that asks for a verdict, the
 * JSON Schema the reply must follow, and the check of a reply against it.
 *
 * The judge's reply is model output, so it is validated the way tool arguments are: parsed
 * (a ```json fence or prose around one object is tolerated, since models add them), checked
 * member by member, and every problem reported as {path, message} in the words the tool-call
 * pipeline uses, so the same repair loop can send it back to the model. The checker follows
 * the schema text in rein_verify_judge_schema() exactly; it is hand-written so that verify
 * does not depend on the schema module, and a unit test keeps the two in step.
 */
#include "verify_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char judge_schema[] =
    "{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\","
    "\"title\":\"rein judge verdict\","
    "\"type\":\"object\","
    "\"properties\":{"
    "\"functionality_score\":{\"type\":\"number\",\"minimum\":0,\"maximum\":10},"
    "\"quality_score\":{\"type\":\"number\",\"minimum\":0,\"maximum\":10},"
    "\"risks\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
    "\"verdict\":{\"enum\":[\"PASS\",\"FAIL\",\"NEEDS_REVIEW\"]},"
    "\"reasoning\":{\"type\":\"string\",\"minLength\":1},"
    "\"confidence\":{\"type\":\"number\",\"minimum\":0,\"maximum\":1}},"
    "\"required\":[\"functionality_score\",\"quality_score\",\"risks\",\"verdict\","
    "\"reasoning\"],"
    "\"additionalProperties\":false}";

const char *rein_verify_judge_schema(void)
{
    return judge_schema;
}

char *rein_verify_judge_prompt(const char *requirement, const char *diff)
{
    return rein_asprintf(
        "## Task\n"
        "Evaluate whether the code change below correctly implements the requirement.\n\n"
        "## Requirement\n%s\n\n"
        "## Code change\n```diff\n%s\n```\n\n"
        "## Criteria\n"
        "1. Functional correctness (0-10)\n"
        "2. Code quality (0-10)\n"
        "3. Potential risks (list them)\n\n"
        "Reply with one JSON object and nothing else:\n"
        "{\"functionality_score\": number, \"quality_score\": number, \"risks\": [string], "
        "\"verdict\": \"PASS\" | \"FAIL\" | \"NEEDS_REVIEW\", \"reasoning\": string, "
        "\"confidence\": number between 0 and 1}\n",
        requirement ? requirement : "", diff ? diff : "");
}

/* ---- checking ---- */

static bool add_error(json_t *errors, const char *path, const char *fmt, ...) REIN_PRINTF(3, 4);

static bool add_error(json_t *errors, const char *path, const char *fmt, ...)
{
    char msg[300];
    va_list ap;

    if (!errors)
        return true;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return json_array_append_new(errors, json_pack("{s:s, s:o}", "path", path, "message",
                                                   rein__verify_jstr(msg))) == 0;
}

/* `string "OK"`, `integer 12`, `object` for messages. */
static void got(const json_t *v, char *out, size_t n)
{
    if (json_is_string(v))
        snprintf(out, n, "string \"%.60s\"", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(out, n, "integer %lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        snprintf(out, n, "number %g", json_real_value(v));
    else if (json_is_boolean(v))
        snprintf(out, n, "boolean %s", json_is_true(v) ? "true" : "false");
    else
        snprintf(out, n, "%s", rein_json_type_name(v));
}

static bool check_number(json_t *errors, const json_t *reply, const char *key, double max,
                         bool required)
{
    const json_t *v = json_object_get(reply, key);
    char path[64], what[100];

    snprintf(path, sizeof(path), "/%s", key);
    if (!v) {
        if (!required)
            return true;
        add_error(errors, "/", "required property \"%s\" is missing", key);
        return false;
    }
    got(v, what, sizeof(what));
    if (!json_is_number(v)) {
        add_error(errors, path, "must be number, got %s", what);
        return false;
    }
    if (json_number_value(v) < 0 || json_number_value(v) > max) {
        add_error(errors, path, "must be between 0 and %g, got %s", max, what);
        return false;
    }
    return true;
}

static bool check_risks(json_t *errors, const json_t *reply)
{
    const json_t *v = json_object_get(reply, "risks");
    bool ok = true;
    char what[100];
    size_t i;
    json_t *item;

    if (!v) {
        add_error(errors, "/", "required property \"risks\" is missing");
        return false;
    }
    if (!json_is_array(v)) {
        got(v, what, sizeof(what));
        add_error(errors, "/risks", "must be array, got %s", what);
        return false;
    }
    json_array_foreach(v, i, item)
    {
        if (!json_is_string(item)) {
            char path[48];
            snprintf(path, sizeof(path), "/risks/%zu", i);
            got(item, what, sizeof(what));
            add_error(errors, path, "must be string, got %s", what);
            ok = false;
        }
    }
    return ok;
}

static bool check_verdict(json_t *errors, const json_t *reply)
{
    const json_t *v = json_object_get(reply, "verdict");
    const char *s = json_string_value(v);
    char what[100];

    if (!v) {
        add_error(errors, "/", "required property \"verdict\" is missing");
        return false;
    }
    if (s && (!strcmp(s, "PASS") || !strcmp(s, "FAIL") || !strcmp(s, "NEEDS_REVIEW")))
        return true;
    got(v, what, sizeof(what));
    add_error(errors, "/verdict", "must be one of \"PASS\", \"FAIL\", \"NEEDS_REVIEW\", got %s",
              what);
    return false;
}

static bool check_reasoning(json_t *errors, const json_t *reply)
{
    const json_t *v = json_object_get(reply, "reasoning");
    char what[100];

    if (!v) {
        add_error(errors, "/", "required property \"reasoning\" is missing");
        return false;
    }
    if (json_is_string(v) && json_string_length(v) > 0)
        return true;
    got(v, what, sizeof(what));
    add_error(errors, "/reasoning",
              json_is_string(v) ? "must not be empty" : "must be string, got %s", what);
    return false;
}

rein_err rein_verify_judge_check(const json_t *reply, json_t **errors, rein_error *err)
{
    static const char *const known[] = {"functionality_score", "quality_score", "risks", "verdict",
                                        "reasoning",           "confidence",    NULL};
    json_t *errs = errors ? json_array() : NULL;
    bool ok = true;
    const char *key;
    json_t *v;
    char what[100];

    if (errors) {
        *errors = NULL;
        if (!errs)
            return rein_error_set(err, REIN_ENOMEM, "out of memory");
    }
    if (!json_is_object(reply)) {
        got(reply, what, sizeof(what));
        ok = false;
        add_error(errs, "/", "must be object, got %s", what);
    } else {
        ok &= check_number(errs, reply, "functionality_score", 10, true);
        ok &= check_number(errs, reply, "quality_score", 10, true);
        ok &= check_risks(errs, reply);
        ok &= check_verdict(errs, reply);
        ok &= check_reasoning(errs, reply);
        ok &= check_number(errs, reply, "confidence", 1, false);
        json_object_foreach((json_t *)reply, key, v)
        {
            bool k = false;
            for (size_t i = 0; known[i] && !k; i++)
                k = strcmp(known[i], key) == 0;
            if (!k) {
                ok = false;
                add_error(errs, "/", "property \"%.60s\" is not allowed", key);
            }
        }
    }
    if (ok) {
        json_decref(errs);
        return REIN_OK;
    }
    if (errs && json_array_size(errs) == 0) {
        json_decref(errs); /* the messages themselves ran out of memory */
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    }
    if (errors)
        *errors = errs;
    return rein_error_set(err, REIN_EINVALID,
                          "the judge's reply does not match the verdict "
                          "schema");
}

/* The first '{' … matching '}' in text, skipping strings; false when there is none. */
static bool find_object(const char *text, size_t len, size_t *start, size_t *end)
{
    for (size_t i = 0; i < len; i++) {
        int depth = 0;
        bool in_str = false;
        if (text[i] != '{')
            continue;
        for (size_t j = i; j < len; j++) {
            char c = text[j];
            if (in_str) {
                if (c == '\\')
                    j++;
                else if (c == '"')
                    in_str = false;
            } else if (c == '"') {
                in_str = true;
            } else if (c == '{') {
                depth++;
            } else if (c == '}' && --depth == 0) {
                *start = i;
                *end = j + 1;
                return true;
            }
        }
        return false; /* the first object never closes: do not guess further */
    }
    return false;
}

rein_err rein_verify_judge_parse(const char *text, size_t len, json_t **reply, json_t **errors,
                                 rein_error *err)
{
    size_t start, end;
    json_t *v;
    rein_err rc;

    if (reply)
        *reply = NULL;
    if (errors)
        *errors = NULL;
    if (!text || !find_object(text, len, &start, &end)) {
        if (errors) {
            *errors = json_array();
            if (!*errors || !add_error(*errors, "/", "the reply holds no JSON object")) {
                json_decref(*errors);
                *errors = NULL;
                return rein_error_set(err, REIN_ENOMEM, "out of memory");
            }
        }
        return rein_error_set(err, REIN_EPARSE, "the judge's reply holds no JSON object");
    }
    v = rein_json_parse(text + start, end - start, JSON_REJECT_DUPLICATES, err);
    if (!v) {
        if (err && err->code == REIN_ENOMEM)
            return REIN_ENOMEM;
        if (errors) {
            *errors = json_array();
            if (!*errors ||
                !add_error(*errors, "/", "not valid JSON: %s", err ? err->msg : "malformed")) {
                json_decref(*errors);
                *errors = NULL;
                return rein_error_set(err, REIN_ENOMEM, "out of memory");
            }
        }
        return err ? err->code : REIN_EPARSE;
    }
    rc = rein_verify_judge_check(v, errors, err);
    if (rc == REIN_ENOMEM) {
        json_decref(v);
        return rc;
    }
    if (reply)
        *reply = v;
    else
        json_decref(v);
    return rc;
}

enum rein_verify_judge_verdict rein_verify_judge_verdict(const json_t *reply)
{
    const char *s = json_string_value(json_object_get(reply, "verdict"));

    if (s && strcmp(s, "PASS") == 0)
        return REIN_VERIFY_JUDGE_PASS;
    if (s && strcmp(s, "FAIL") == 0)
        return REIN_VERIFY_JUDGE_FAIL;
    return REIN_VERIFY_JUDGE_NEEDS_REVIEW;
}

double rein_verify_judge_confidence(const json_t *reply)
{
    const json_t *c = json_object_get(reply, "confidence");
    double f = json_number_value(json_object_get(reply, "functionality_score"));
    double q = json_number_value(json_object_get(reply, "quality_score"));
    double conf = json_is_number(c) ? json_number_value(c) : (f < q ? f : q) / 10.0;

    if (isnan(conf) || conf < 0)
        conf = 0;
    if (conf > 1)
        conf = 1;
    /* A judge that asks for a person is, by its own account, not sure. */
    if (rein_verify_judge_verdict(reply) == REIN_VERIFY_JUDGE_NEEDS_REVIEW &&
        conf >= REIN_VERIFY_CONFIDENCE_HIGH)
        conf = REIN_VERIFY_CONFIDENCE_HIGH - 0.01;
    return conf;
}
