/*
 * Fuzz target: the calculator's expression parser (src/skills/calc.c). Any text must give a
 * finite number or an error with a position inside the text, never a crash or a deep stack.
 */
#include <rein/rein.h>

#include "skills/skills_int.h"

#include <math.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rein__skills_calc_error e;
    double v;

    if (size > 20000)
        return 0;
    if (rein__skills_calc_eval((const char *)data, size, &v, &e) == REIN_OK) {
        if (!isfinite(v))
            abort();
    } else if (e.position > size + 1 || !e.msg[0]) {
        abort();
    }
    return 0;
}
