/* Thin helpers over the CUDA runtime and cuBLAS for the trainer: tagged allocation, kernel
 * launch over an index space, and row-major GEMMs. All of them exit on failure (check.h).
 */
#ifndef MLP_DEVICE_H
#define MLP_DEVICE_H

#include <stddef.h>

#include <cublas_api.h>

#include "kernels.h"
#include "options.h"

/* cudaMalloc under a memshim category tag (apptags.h). */
void *device_alloc(size_t bytes, const char *category);
/* cudaFree; NULL is allowed. */
void device_free(void *p);
void device_copy_to_device(void *dst, const void *src, size_t bytes);
void device_copy_to_host(void *dst, const void *src, size_t bytes);

/* Launch kernel id over n indices (its grid-stride loop covers all of them); args as for
 * cudaLaunchKernel, one pointer per parameter. */
void device_launch(enum kernels_id id, long n, void **args);

/* C = A * op(B) style GEMMs on row-major matrices, as a framework's linear layer issues them.
 * y (rows x out) = x (rows x in) * w^T, w being out x in. */
void device_gemm_linear(cublasHandle_t h, enum options_gemm kind, float *y, const float *x,
                        const float *w, long rows, long in, long out);
/* dx (rows x in) = dy (rows x out) * w. */
void device_gemm_grad_input(cublasHandle_t h, enum options_gemm kind, float *dx, const float *dy,
                            const float *w, long rows, long in, long out);
/* dw (out x in) = dy^T (out x rows) * x (rows x in). */
void device_gemm_grad_weight(cublasHandle_t h, enum options_gemm kind, float *dw, const float *dy,
                             const float *x, long rows, long in, long out);

#endif /* MLP_DEVICE_H */
