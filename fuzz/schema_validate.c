/*
 * libFuzzer target for the JSON Schema validator: the input is a schema and an instance
 * separated by a line "---" (without one, the input is both). The schema is compiled as
 * 2020-12 and as draft-07 with format assertions, and the instance validated with errors
 * collected and with defaults filled. Any crash, hang, leak or sanitizer report is a bug.
 *
 * Differential: the verdict program (src/schema/verdict.c) and the node walker must agree on
 * valid/invalid, and on the number of errors, whenever both decide (neither fails with a hard
 * error), and the errors recorded along the program with a result must be the walker's, part
 * for part (tests/support/schema_same.c, compiled in), and the instance read as a rein_doc
 * must give the same answers and errors as its tree; a disagreement aborts.
 */
#include <rein/rein.h>

#include <stdlib.h>
#include <string.h>

#include "schema/schema_int.h"

#include "../tests/support/schema_same.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void run(json_t *schema_doc, json_t *inst, const struct rein_schema_options *opts,
                rein_schema_result *res)
{
    rein_error err;
    rein_schema *schema = rein_schema_compile(schema_doc, opts, &err);

    if (!schema)
        return;
    if (rein_schema_validate(schema, inst, 0, res, &err) == REIN_OK) {
        json_t *copy = json_deep_copy(inst);
        if (copy && rein_schema_validate(schema, copy, REIN_SCHEMA_FILL_DEFAULTS, NULL, &err))
            err.code = 0;
        json_decref(copy);
    }
    for (size_t i = 0; i < rein_schema_result_count(res); i++) {
        /* Touch every part so the sanitizers check them. */
        size_t n = strlen(rein_schema_result_message(res, i)) +
                   strlen(rein_schema_result_instance_path(res, i)) +
                   strlen(rein_schema_result_keyword_path(res, i));
        (void)n;
    }
    rein_err fast = rein_schema_validate(schema, inst, REIN_SCHEMA_FIRST_ERROR, NULL, NULL);
    rein_err walk = rein__schema_walk(schema, inst, 0, NULL, &err);
    rein_error counted;
    rein_err count = rein_schema_validate(schema, inst, 0, NULL, &counted);
    if ((fast == REIN_OK && walk == REIN_EINVALID) || (fast == REIN_EINVALID && walk == REIN_OK))
        abort(); /* the verdict program and the node walker disagree */
    if (walk == REIN_EINVALID && count == REIN_EINVALID && strcmp(err.msg, counted.msg) != 0)
        abort(); /* they count the errors differently */
    for (int f = 0; f < 2; f++) {
        char why[512];
        if (!test_schema_same_errors(schema, inst, f ? REIN_SCHEMA_FIRST_ERROR : 0, why,
                                     sizeof(why)))
            abort(); /* the errors recorded along the program are not the walker's */
        if (!test_schema_same_doc(schema, inst, f ? REIN_SCHEMA_FIRST_ERROR : 0, why, sizeof(why)))
            abort(); /* the document form answers otherwise than its tree */
    }
    rein_schema_free(schema);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    const char *sep = size >= 5 ? memmem(text, size, "\n---\n", 5) : NULL;
    size_t slen = sep ? (size_t)(sep - text) : size;
    rein_error err;
    json_t *schema_doc = rein_json_parse(text, slen, 0, &err);
    json_t *inst =
        sep ? rein_json_parse(sep + 5, size - slen - 5, 0, &err) : json_incref(schema_doc);
    struct rein_schema_options draft7 = {REIN_SCHEMA_DIALECT_DRAFT7, true, NULL, NULL};
    rein_schema_result *res = rein_schema_result_new();

    if (schema_doc && inst && res) {
        run(schema_doc, inst, NULL, res);
        run(schema_doc, inst, &draft7, res);
    }
    rein_schema_result_free(res);
    json_decref(schema_doc);
    json_decref(inst);
    return 0;
}
