/* blas_unsupported: the status the unsimulated entry points answer, for a file that cannot
 * include cublas_api.h (its definitions would clash with the declarations there). */
#ifndef SIMCUDA_BLAS_UNSUPPORTED_H
#define SIMCUDA_BLAS_UNSUPPORTED_H

/* CUBLAS_STATUS_NOT_SUPPORTED; cublas_handle.c asserts the two agree. */
#define BLAS_UNSUPPORTED_STATUS 15

#endif
