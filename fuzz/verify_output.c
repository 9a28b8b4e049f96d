/*
 * Fuzz target for the output parsers (src/verify/output.c, junit.c, coverage.c's printed
 * totals): tool output is untrusted bytes, so every format is run over the input, with
 * diagnostics collected, and the counts must stay consistent (nothing negative, at most 50
 * diagnostics). The stream reader must not care where the bytes are split: the input fed in
 * two pieces (split where its first byte says) must give the same counts as fed whole.
 */
#include <rein/verify.h>

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void split_parse(const uint8_t *data, size_t size, enum rein_verify_format f,
                        const struct rein_verify_counts *whole)
{
    rein_verify_output *o = rein_verify_output_new(f, false);
    struct rein_verify_counts c;
    size_t at = size ? data[0] % size : 0;

    if (!o)
        return;
    rein_verify_output_feed(o, (const char *)data, at);
    rein_verify_output_feed(o, (const char *)data + at, size - at);
    if (rein_verify_output_finish(o, &c, NULL, NULL) == REIN_OK &&
        (c.has_tests != whole->has_tests || c.failed != whole->failed || c.total != whole->total ||
         c.errors != whole->errors || c.has_coverage != whole->has_coverage ||
         strcmp(c.format, whole->format) != 0))
        __builtin_trap();
    rein_verify_output_free(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (int f = REIN_VERIFY_FORMAT_AUTO; f <= REIN_VERIFY_FORMAT_JUNIT; f++) {
        struct rein_verify_counts c;
        json_t *diags = NULL;
        if (rein_verify_output_parse((const char *)data, size, (enum rein_verify_format)f, &c,
                                     &diags, NULL) == REIN_OK) {
            if (c.passed < 0 || c.failed < 0 || c.skipped < 0 || c.total < 0 || c.errors < 0 ||
                c.warnings < 0 || json_array_size(diags) > 50 ||
                (c.has_coverage && !(c.coverage >= 0 && c.coverage <= 100)))
                __builtin_trap();
            split_parse(data, size, (enum rein_verify_format)f, &c);
        }
        json_decref(diags);
    }
    return 0;
}
