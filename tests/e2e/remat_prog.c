/* remat-prog: workloads for MEMSHIM_POLICY=recompute on simcuda (remat_check.py runs them under
 * the shim with a ceiling of 8 granules and reads the trace). Matrices are N x N floats holding
 * small integers, so every product is exact and a wrong operand shows as a wrong value.
 * "Pressure" writes 8 filler buffers in turn: everything else is least recently used and leaves
 * the device (dropped when it has a valid lineage, else spilled).
 *
 *   remat-prog invalidate kernel|copy|memset
 *       C = A*B; pressure (C dropped); A overwritten by a kernel, a copy or a memset (C must be
 *       recomputed from the old A first); pressure again (C's lineage is gone: spilled); C read
 *       back must be the original product.
 *   remat-prog chain      C = A*B, E = C*D; pressure (both dropped); E read: C recomputed inside
 *                         E's recompute; E and C right.
 *   remat-prog exposed    C = A*B; C's address copied to the device in a pointer array;
 *                         pressure: C is spilled, never dropped; C right.
 *   remat-prog free       C = A*B; pressure (C dropped); A freed (C recomputed first); C right.
 *
 * Prints "<scenario> ok" and the addresses of C (and E) for the checker; exit 1 on a mismatch. */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simcuda.h"

#define N       512 /* 1 MiB per matrix: its own range above MEMSHIM_SPILL_MIN=512k */
#define FILLERS 8

static void die(const char *what, long code)
{
    fprintf(stderr, "FAIL: %s (%ld)\n", what, code);
    exit(1);
}

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess)                                                                     \
            die(#call, (long)e_);                                                                  \
    } while (0)

static const size_t bytes = sizeof(float) * N * N;
static cublasHandle_t blas;
static void *filler[FILLERS];

/* Kernel: p[i] += 1 for i < n floats. */
static void inc_kernel(void **params, const simcuda_launch *launch)
{
    (void)launch;
    float *p = *(float **)params[0];
    size_t n = *(size_t *)params[1];
    for (size_t i = 0; i < n; i++)
        p[i] += 1.0f;
}

static float *matrix(unsigned seed)
{
    float *h = malloc(bytes);
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i < (size_t)N * N; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        h[i] = (float)(s % 4);
    }
    return h;
}

static void *upload(const float *h)
{
    void *d;
    CK(cudaMalloc(&d, bytes));
    CK(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
    return d;
}

/* Column-major C = A * B on the host. */
static float *product(const float *a, const float *b)
{
    float *c = calloc((size_t)N * N, sizeof *c);
    for (int col = 0; col < N; col++)
        for (int k = 0; k < N; k++) {
            float bk = b[col * N + k];
            for (int row = 0; row < N; row++)
                c[col * N + row] += a[k * N + row] * bk;
        }
    return c;
}

static void gemm(const void *a, const void *b, void *c)
{
    const float one = 1, zero = 0;
    if (cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, a, N, b, N, &zero, c, N) !=
        CUBLAS_STATUS_SUCCESS)
        die("cublasSgemm", 0);
}

static void check(const void *dev, const float *want, const char *what)
{
    float *h = malloc(bytes);
    CK(cudaMemcpy(h, dev, bytes, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < (size_t)N * N; i++)
        if (h[i] != want[i]) {
            fprintf(stderr, "FAIL: %s differs at element %zu: %g, expected %g\n", what, i, h[i],
                    want[i]);
            exit(1);
        }
    free(h);
}

static void pressure(void)
{
    for (int i = 0; i < FILLERS; i++)
        CK(cudaMemset(filler[i], i, bytes));
}

static void setup(void)
{
    size_t kparams[] = {sizeof(void *), sizeof(size_t)};
    if (simcudaRegisterKernel(inc_kernel, "inc_kernel", 2, kparams) != 0)
        die("simcudaRegisterKernel", 0);
    if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS)
        die("cublasCreate", 0);
    for (int i = 0; i < FILLERS; i++)
        CK(cudaMalloc(&filler[i], bytes));
}

/* A small read of each, so that C (written before) is the least recently used of the three. */
static void touch(const void *a, const void *b)
{
    float x;
    CK(cudaMemcpy(&x, a, sizeof x, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&x, b, sizeof x, cudaMemcpyDeviceToHost));
}

static int invalidate(const char *how)
{
    float *ha = matrix(1), *hb = matrix(2);
    float *want = product(ha, hb);
    void *a = upload(ha), *b = upload(hb), *c;
    CK(cudaMalloc(&c, bytes));
    gemm(a, b, c);
    touch(a, b);
    pressure();
    if (strcmp(how, "kernel") == 0) {
        size_t n = (size_t)N * N;
        void *args[] = {&a, &n};
        CK(cudaLaunchKernel((const void *)inc_kernel, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0,
                            NULL));
    } else if (strcmp(how, "copy") == 0) {
        float *hz = matrix(3);
        CK(cudaMemcpy(a, hz, bytes, cudaMemcpyHostToDevice));
        free(hz);
    } else if (strcmp(how, "memset") == 0) {
        CK(cudaMemset(a, 0, bytes));
    } else {
        die("unknown overwrite", 0);
    }
    pressure();
    check(c, want, "C");
    printf("invalidate %s ok C=%#llx\n", how, (unsigned long long)(uintptr_t)c);
    return 0;
}

static int chain(void)
{
    float *ha = matrix(1), *hb = matrix(2), *hd = matrix(4);
    float *wc = product(ha, hb);
    float *we = product(wc, hd);
    /* Products of products grow: still exact (below 2^24) at N = 512 with entries below 4. */
    void *a = upload(ha), *b = upload(hb), *d = upload(hd), *c, *e;
    CK(cudaMalloc(&c, bytes));
    CK(cudaMalloc(&e, bytes));
    gemm(a, b, c);
    gemm(c, d, e);
    touch(a, b);
    touch(d, a);
    pressure();
    check(e, we, "E");
    check(c, wc, "C");
    printf("chain ok C=%#llx E=%#llx\n", (unsigned long long)(uintptr_t)c,
           (unsigned long long)(uintptr_t)e);
    return 0;
}

static int exposed(void)
{
    float *ha = matrix(1), *hb = matrix(2);
    float *want = product(ha, hb);
    void *a = upload(ha), *b = upload(hb), *c, *arr;
    CK(cudaMalloc(&c, bytes));
    CK(cudaMalloc(&arr, 3 * sizeof(void *)));
    gemm(a, b, c);
    void *ptrs[3] = {a, b, c}; /* as a batched GEMM's pointer array reaches the device */
    CK(cudaMemcpy(arr, ptrs, sizeof ptrs, cudaMemcpyHostToDevice));
    touch(a, b);
    pressure();
    check(c, want, "C");
    printf("exposed ok C=%#llx\n", (unsigned long long)(uintptr_t)c);
    return 0;
}

static int free_input(void)
{
    float *ha = matrix(1), *hb = matrix(2);
    float *want = product(ha, hb);
    void *a = upload(ha), *b = upload(hb), *c;
    CK(cudaMalloc(&c, bytes));
    gemm(a, b, c);
    touch(a, b);
    pressure();
    CK(cudaFree(a));
    pressure();
    check(c, want, "C");
    printf("free ok C=%#llx\n", (unsigned long long)(uintptr_t)c);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        die("usage: remat-prog invalidate kernel|copy|memset | chain | exposed | free", 0);
    setup();
    if (argc >= 3 && strcmp(argv[1], "invalidate") == 0)
        return invalidate(argv[2]);
    if (strcmp(argv[1], "chain") == 0)
        return chain();
    if (strcmp(argv[1], "exposed") == 0)
        return exposed();
    if (strcmp(argv[1], "free") == 0)
        return free_input();
    die("unknown scenario", 0);
}
