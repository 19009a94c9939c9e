/* blas_unsupported: the entry points of blas_unsupported.def, each a function that ignores its
 * arguments and answers CUBLAS_STATUS_NOT_SUPPORTED, so a program linked against them loads and
 * a call fails cleanly. The definitions take no parameters: with the C calling convention the
 * caller owns its arguments, so a callee that reads none is safe whatever it was passed. This
 * file therefore cannot see cublas_api.h's prototypes; the status is checked against the header
 * in cublas_handle.c. */
#include "blas_unsupported.h"

#define BLAS_UNSUPPORTED(name)                                                                     \
    int name(void);                                                                                \
    int name(void)                                                                                 \
    {                                                                                              \
        return BLAS_UNSUPPORTED_STATUS;                                                            \
    }
#include "blas_unsupported.def"
#undef BLAS_UNSUPPORTED
