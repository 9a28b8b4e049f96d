/*
 * Fuzz target for the coverage readers (src/verify/coverage.c): coverage.py and gcovr JSON,
 * Istanbul's coverage-summary.json, lcov tracefiles, Go profiles, JaCoCo and Cobertura XML
 * and printed totals are all untrusted bytes. A report that is read must give a percentage
 * from 0 to 100 and counts that fit it.
 */
#include <rein/verify.h>

#include <math.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rein_verify_coverage c;

    if (rein_verify_coverage_parse((const char *)data, size, &c, NULL) != REIN_OK)
        return 0;
    if (!(c.percent >= 0 && c.percent <= 100) || isnan(c.percent) || c.format[0] == '\0')
        __builtin_trap();
    return 0;
}
