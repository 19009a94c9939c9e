/* e2e_check: how the e2e test programs stop on a failed CUDA call. One line naming the call
 * and its code, exit status 1: the checkers read the line and the status. */
#ifndef MEMSHIM_E2E_CHECK_H
#define MEMSHIM_E2E_CHECK_H

#include <stdio.h>
#include <stdlib.h>

static inline void die(const char *what, long code)
{
    fprintf(stderr, "FAIL: %s (%ld)\n", what, code);
    exit(1);
}

/* A runtime call that must succeed. */
#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess)                                                                     \
            die(#call, (long)e_);                                                                  \
    } while (0)

#endif /* MEMSHIM_E2E_CHECK_H */
