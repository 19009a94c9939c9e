/* guard: the per-thread recursion guard and cuBLAS depth. */
#include "guard.h"

#include <stdint.h>

#include "compat.h"

static MS_TLS struct {
    uint8_t held;
    int blas_depth;
} guard_tls;

int guard_enter(void)
{
    if (guard_tls.held)
        return 0;
    guard_tls.held = 1;
    return 1;
}

void guard_leave(void)
{
    guard_tls.held = 0;
}

int guard_held(void)
{
    return guard_tls.held;
}

int guard_in_blas(void)
{
    return guard_tls.blas_depth != 0;
}

void guard_blas_enter(void)
{
    guard_tls.blas_depth++;
}

void guard_blas_leave(void)
{
    guard_tls.blas_depth--;
}
