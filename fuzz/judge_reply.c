/*
 * Fuzz target for the LLM judge's reply (src/verify/judge.c): model output is parsed (fences
 * and prose tolerated) and checked against the verdict schema. A conforming reply must have a
 * verdict and a confidence in [0, 1]; a failing one must come with at least one error.
 */
#include <rein/verify.h>

#include <math.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *reply = NULL, *errors = NULL;
    rein_err rc = rein_verify_judge_parse((const char *)data, size, &reply, &errors, NULL);

    if (rc == REIN_OK) {
        double c = rein_verify_judge_confidence(reply);
        (void)rein_verify_judge_verdict(reply);
        if (!(c >= 0 && c <= 1) || errors)
            __builtin_trap();
    } else if ((rc == REIN_EINVALID || rc == REIN_EPARSE) && json_array_size(errors) == 0) {
        __builtin_trap();
    }
    json_decref(reply);
    json_decref(errors);
    return 0;
}
