/* estimate_formulas: the analytic memory model of transformer training (estimate_compute,
 * declared in estimate.h) and the rounding its results share with the command's report. */
#ifndef ANALYZE_ESTIMATE_FORMULAS_H
#define ANALYZE_ESTIMATE_FORMULAS_H

#include <math.h>
#include <stdint.h>

/* Bytes and counts from the formulas, rounded up and saturated: absurd inputs (a 2^26-token
 * sequence of 2^26 sequences) must give a huge number, not undefined behaviour. */
static inline uint64_t sat(double x)
{
    if (!(x > 0))
        return 0;
    /* Round up, but not past a whole number that rounding errors of the formula nudged. */
    x = ceil(x * (1 - 1e-12));
    return x >= 0x1p64 ? UINT64_MAX : (uint64_t)x;
}

#endif /* ANALYZE_ESTIMATE_FORMULAS_H */
