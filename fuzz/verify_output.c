/*
 * Fuzz target for the output parsers (src/verify/output.c): tool output is untrusted bytes,
 * so every format is run over the input, with diagnostics collected, and the counts must stay
 * consistent (nothing negative).
 */
#include <rein/verify.h>

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (int f = REIN_VERIFY_FORMAT_AUTO; f <= REIN_VERIFY_FORMAT_ESLINT; f++) {
        struct rein_verify_counts c;
        json_t *diags = NULL;
        if (rein_verify_output_parse((const char *)data, size, (enum rein_verify_format)f, &c,
                                     &diags, NULL) == REIN_OK) {
            if (c.passed < 0 || c.failed < 0 || c.skipped < 0 || c.total < 0 || c.errors < 0 ||
                c.warnings < 0 || json_array_size(diags) > 50)
                __builtin_trap();
        }
        json_decref(diags);
    }
    return 0;
}
