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

#include <rein/schema.h>

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

json_t *rein__verify_judge_schema_json(rein_error *err)
{
    json_t *doc = rein_json_parse(judge_schema, sizeof(judge_schema) - 1, 0, err);
    char *back = doc ? rein_json_dumps(doc) : NULL;

    /*
     * jansson's parser can drop a character when its string buffer cannot grow and still
     * return a document ("json-shema.org"); a schema bent that way would judge valid replies
     * invalid. The text is compact already, so it must come back byte for byte.
     */
    if (!back || strcmp(back, judge_schema) != 0) {
        rein_free(back);
        json_decref(doc);
        rein_error_set(err, REIN_ENOMEM, "out of memory");
        return NULL;
    }
    rein_free(back);
    return doc;
}

/* The verdict schema, compiled. New; NULL with err set (only REIN_ENOMEM in practice). */
static rein_schema *compile_schema(rein_error *err)
{
    json_t *doc = rein__verify_judge_schema_json(err);
    rein_schema *s;

    if (!doc)
        return NULL;
    s = rein_schema_compile(doc, NULL, err);
    json_decref(doc);
    return s;
}

/* The validator's errors as [{path, message}], "" paths shown as "/" like the pipeline's. */
static rein_err collect_errors(const rein_schema_result *res, json_t *errors)
{
    for (size_t i = 0; i < rein_schema_result_count(res); i++) {
        const char *path = rein_schema_result_instance_path(res, i);
        json_t *e = json_pack("{s:s, s:o}", "path", path[0] ? path : "/", "message",
                              rein__verify_jstr(rein_schema_result_message(res, i)));
        if (!e || json_array_append_new(errors, e))
            return REIN_ENOMEM;
    }
    return REIN_OK;
}

rein_err rein_verify_judge_check(const json_t *reply, json_t **errors, rein_error *err)
{
    rein_schema *schema;
    rein_schema_result *res = NULL;
    json_t *errs = NULL;
    rein_err rc;

    if (errors)
        *errors = NULL;
    schema = compile_schema(err);
    if (!schema)
        return err && err->code ? err->code : REIN_ENOMEM;
    res = errors ? rein_schema_result_new() : NULL;
    errs = errors ? json_array() : NULL;
    if (errors && (!res || !errs)) {
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
        goto out;
    }
    /* Without FILL_DEFAULTS the validator only reads the instance. */
    rc = rein_schema_validate(schema, (json_t *)reply, errors ? 0 : REIN_SCHEMA_FIRST_ERROR, res,
                              err);
    if (rc != REIN_EINVALID) /* valid, or validation itself failed */
        goto out;
    if (errors) {
        if (collect_errors(res, errs) || json_array_size(errs) == 0) {
            rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
            goto out;
        }
        *errors = errs;
        errs = NULL;
    }
    rc = rein_error_set(err, REIN_EINVALID, "the judge's reply does not match the verdict schema");
out:
    json_decref(errs);
    rein_schema_result_free(res);
    rein_schema_free(schema);
    return rc;
}

bool rein__verify_judge_find_object(const char *text, size_t len, size_t *start, size_t *end)
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
    if (!text || !rein__verify_judge_find_object(text, len, &start, &end)) {
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

const char *rein_verify_judge_verdict_name(enum rein_verify_judge_verdict v)
{
#define NAME(id, name) name,
    static const char *const names[] = {REIN_VERIFY_JUDGE_MAP(NAME)};
#undef NAME

    return (unsigned)v < REIN_ARRAY_SIZE(names) ? names[v] : "UNVERIFIABLE";
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
