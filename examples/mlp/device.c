/* CUDA runtime and cuBLAS calls of the trainer. */
#include <stdio.h>

#include "apptags.h"
#include "check.h"
#include "device.h"

#define BLOCK_THREADS 256
#define MAX_BLOCKS    4096

void *device_alloc(size_t bytes, const char *category)
{
    void *p = NULL;
    apptags_push(category);
    cudaError_t err = cudaMalloc(&p, bytes);
    apptags_pop();
    if (err != cudaSuccess) {
        /* Say what did not fit: ceiling tests read it. */
        char call[96];
        snprintf(call, sizeof(call), "cudaMalloc of %zu bytes (%s)", bytes, category);
        check_cuda(err, call, __FILE__, __LINE__);
    }
    return p;
}

void device_free(void *p)
{
    if (p)
        CHECK_CUDA(cudaFree(p));
}

void device_copy_to_device(void *dst, const void *src, size_t bytes)
{
    CHECK_CUDA(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
}

void device_copy_to_host(void *dst, const void *src, size_t bytes)
{
    CHECK_CUDA(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}

void device_launch(enum kernels_id id, long n, void **args)
{
    long blocks = (n + BLOCK_THREADS - 1) / BLOCK_THREADS;
    if (blocks < 1)
        blocks = 1;
    if (blocks > MAX_BLOCKS)
        blocks = MAX_BLOCKS;
    dim3 grid = {(unsigned)blocks, 1, 1};
    dim3 block = {BLOCK_THREADS, 1, 1};
    CHECK_CUDA(cudaLaunchKernel(kernels_function(id), grid, block, args, 0, NULL));
}

/* Column-major C (m x n) = op(A) * op(B), beta = 0: every GEMM here overwrites its output. */
static void gemm(cublasHandle_t h, enum options_gemm kind, cublasOperation_t ta,
                 cublasOperation_t tb, long m, long n, long k, const float *a, long lda,
                 const float *b, long ldb, float *c, long ldc)
{
    const float alpha = 1.0f, beta = 0.0f;
    if (kind == OPTIONS_GEMM_EX)
        CHECK_CUBLAS(cublasGemmEx(h, ta, tb, (int)m, (int)n, (int)k, &alpha, a, CUDA_R_32F,
                                  (int)lda, b, CUDA_R_32F, (int)ldb, &beta, c, CUDA_R_32F, (int)ldc,
                                  CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    else
        CHECK_CUBLAS(cublasSgemm_v2(h, ta, tb, (int)m, (int)n, (int)k, &alpha, a, (int)lda, b,
                                    (int)ldb, &beta, c, (int)ldc));
}

/* A row-major r x c matrix is, to cuBLAS, a column-major c x r matrix: its transpose. So
 * each row-major product below is computed as the transposed column-major one. */

void device_gemm_linear(cublasHandle_t h, enum options_gemm kind, float *y, const float *x,
                        const float *w, long rows, long in, long out)
{
    /* y^T (out x rows) = w (out x in) * x^T (in x rows) */
    gemm(h, kind, CUBLAS_OP_T, CUBLAS_OP_N, out, rows, in, w, in, x, in, y, out);
}

void device_gemm_grad_input(cublasHandle_t h, enum options_gemm kind, float *dx, const float *dy,
                            const float *w, long rows, long in, long out)
{
    /* dx^T (in x rows) = w^T (in x out) * dy^T (out x rows) */
    gemm(h, kind, CUBLAS_OP_N, CUBLAS_OP_N, in, rows, out, w, in, dy, out, dx, in);
}

void device_gemm_grad_weight(cublasHandle_t h, enum options_gemm kind, float *dw, const float *dy,
                             const float *x, long rows, long in, long out)
{
    /* dw^T (in x out) = x^T (in x rows) * dy (rows x out) */
    gemm(h, kind, CUBLAS_OP_N, CUBLAS_OP_T, in, out, rows, x, in, dy, out, dw, in);
}
