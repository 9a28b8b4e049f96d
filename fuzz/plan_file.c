/*
 * Fuzz target for saved plan files (src/plan/plan_json.c): a plan is read back from a file
 * that anyone may have edited, so any bytes must give a plan or an error with a message,
 * never a crash, a leak or a hang. A plan that loads is put through what a resume does with
 * it (reset, ready steps, verification, the text and DOT views) and written back, and what
 * is written must load again to the same JSON.
 */
#include <rein/plan.h>

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void exercise(rein_plan *p)
{
    size_t ready[REIN_PLAN_MAX_STEPS];
    struct rein_buf b;
    json_t *report = NULL;
    size_t n = rein_plan_step_count(p);

    (void)rein_plan_resume_reset(p);
    (void)rein_plan_ready_steps(p, ready, REIN_PLAN_MAX_STEPS);
    for (size_t i = 0; i < n && i < 8; i++) {
        const char *out = rein_plan_get_step_output(p, i);
        (void)rein_plan_verify_step(p, i, out, NULL, NULL, 0, &report);
        json_decref(report);
        report = NULL;
    }
    rein_buf_init(&b, 0);
    if (rein_plan_write_text(p, &b) != REIN_OK || rein_plan_write_dot(p, &b) != REIN_OK)
        __builtin_trap();
    rein_buf_release(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rein_error err;
    rein_plan *p = rein_plan_parse((const char *)data, size, &err), *again;
    json_t *j, *k;

    if (!p) {
        if (err.msg[0] == '\0')
            __builtin_trap(); /* a failure must always say why */
        return 0;
    }
    j = rein_plan_to_json(p);
    again = j ? rein_plan_from_json(j, &err) : NULL;
    if (j && !again)
        __builtin_trap(); /* what rein writes, rein must read */
    k = again ? rein_plan_to_json(again) : NULL;
    if (k && !json_equal(j, k))
        __builtin_trap();
    json_decref(k);
    json_decref(j);
    rein_plan_free(again);
    exercise(p);
    rein_plan_free(p);
    return 0;
}
