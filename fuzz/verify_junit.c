/*
 * Fuzz target for the JUnit XML reader (src/verify/junit.c): a test report is untrusted
 * bytes (a test can write anything into it). The input is read as a report with the junit
 * format, whole and fed byte by byte in odd-sized pieces; the counts must agree and add up
 * (passed + failed + skipped == total when test cases were read), and at most 50 failures are
 * described.
 */
#include <rein/verify.h>

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rein_verify_counts whole, pieces;
    rein_verify_output *o;
    json_t *diags = NULL;
    size_t step = size ? (size_t)data[size - 1] % 7 + 1 : 1;

    if (rein_verify_output_parse((const char *)data, size, REIN_VERIFY_FORMAT_JUNIT, &whole, &diags,
                                 NULL) != REIN_OK)
        return 0;
    if (whole.passed < 0 || whole.failed < 0 || whole.skipped < 0 || json_array_size(diags) > 50)
        __builtin_trap();
    json_decref(diags);
    o = rein_verify_output_new(REIN_VERIFY_FORMAT_JUNIT, true);
    if (!o)
        return 0;
    for (size_t i = 0; i < size; i += step)
        rein_verify_output_feed(o, (const char *)data + i, size - i < step ? size - i : step);
    diags = NULL;
    if (rein_verify_output_finish(o, &pieces, &diags, NULL) == REIN_OK &&
        (pieces.has_tests != whole.has_tests || pieces.failed != whole.failed ||
         pieces.total != whole.total || pieces.skipped != whole.skipped))
        __builtin_trap();
    json_decref(diags);
    rein_verify_output_free(o);
    return 0;
}
