/* See schema_same.h. */
#include "schema_same.h"

#include <stdio.h>
#include <string.h>

#include "schema/schema_int.h"

static bool same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* The errors of got and want are the same, part for part. */
static bool same_results(const rein_schema_result *got, const rein_schema_result *want, char *why,
                         size_t why_size)
{
    const char *(*const parts[])(const rein_schema_result *, size_t) = {
        rein_schema_result_instance_path, rein_schema_result_keyword_path,
        rein_schema_result_keyword, rein_schema_result_property, rein_schema_result_message};

    if (rein_schema_result_count(got) != rein_schema_result_count(want)) {
        snprintf(why, why_size, "%zu errors, expected %zu", rein_schema_result_count(got),
                 rein_schema_result_count(want));
        return false;
    }
    for (size_t i = 0; i < rein_schema_result_count(want); i++) {
        for (size_t k = 0; k < sizeof(parts) / sizeof(parts[0]); k++) {
            const char *a = parts[k](got, i), *b = parts[k](want, i);
            if (!same_str(a, b)) {
                snprintf(why, why_size, "error %zu, part %zu: \"%s\", expected \"%s\"", i, k,
                         a ? a : "(null)", b ? b : "(null)");
                return false;
            }
        }
    }
    return true;
}

bool test_schema_same_doc(const rein_schema *schema, json_t *inst, unsigned flags, char *why,
                          size_t why_size)
{
    rein_schema_result *got = rein_schema_result_new(), *want = rein_schema_result_new();
    char *text = rein_json_dumps(inst);
    rein_error err = {0};
    rein_doc *doc = text ? rein_doc_parse(text, strlen(text), &err) : NULL;
    bool same = doc && got && want;

    why[0] = '\0';
    if (!same)
        snprintf(why, why_size, "the document does not parse: %s", err.msg);
    /* with a result and an error, with an error, with neither */
    for (int mode = 0; same && mode < 3; mode++) {
        rein_error gerr = {0}, werr = {0};
        rein_schema_result *gres = mode == 0 ? got : NULL, *wres = mode == 0 ? want : NULL;
        rein_err grc = rein_schema_validate_doc(schema, doc, flags, gres, mode < 2 ? &gerr : NULL);
        /* With a result, the document's errors are recorded along the program on its nodes:
         * compared with the walker's own, not with the tree's recording of them. */
        rein_err wrc =
            mode == 0 ? rein__schema_walk(schema, inst, flags, wres, &werr)
                      : rein_schema_validate(schema, inst, flags, wres, mode < 2 ? &werr : NULL);
        if (grc != wrc || strcmp(gerr.msg, werr.msg) != 0) {
            snprintf(why, why_size, "mode %d: %s \"%s\", expected %s \"%s\"", mode,
                     rein_err_name(grc), gerr.msg, rein_err_name(wrc), werr.msg);
            same = false;
        } else if (mode == 0) {
            same = same_results(got, want, why, why_size);
        }
    }
    if (same && !json_equal((json_t *)rein_doc_tree(doc), inst)) {
        snprintf(why, why_size, "the document's tree is not the instance");
        same = false;
    }
    rein_doc_free(doc);
    rein_free(text);
    rein_schema_result_free(got);
    rein_schema_result_free(want);
    return same;
}

bool test_schema_same_errors(const rein_schema *schema, json_t *inst, unsigned flags, char *why,
                             size_t why_size)
{
    rein_schema_result *got = rein_schema_result_new(), *want = rein_schema_result_new();
    rein_error gerr = {0}, werr = {0};
    rein_err grc, wrc;
    bool same = true;

    why[0] = '\0';
    grc = rein_schema_validate(schema, inst, flags, got, &gerr);
    wrc = rein__schema_walk(schema, inst, flags, want, &werr);
    if (grc != wrc || (wrc == REIN_EINVALID && strcmp(gerr.msg, werr.msg) != 0) ||
        rein_schema_result_count(got) != rein_schema_result_count(want)) {
        snprintf(why, why_size, "%s \"%s\" with %zu errors, the walker: %s \"%s\" with %zu",
                 rein_err_name(grc), gerr.msg, rein_schema_result_count(got), rein_err_name(wrc),
                 werr.msg, rein_schema_result_count(want));
        same = false;
    }
    if (same)
        same = same_results(got, want, why, why_size);
    rein_schema_result_free(got);
    rein_schema_result_free(want);
    return same;
}
