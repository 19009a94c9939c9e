/* simcuda's libcublas.so.13 and libcublasLt.so.13 through their public APIs, on the simulated
 * runtime and driver: handle and workspace life cycle (seen in the device's free memory), every
 * GEMM entry point against a float64 reference for all transpose combinations and odd sizes,
 * batches (strided and pointer arrays in device memory), device pointer mode, argument checks,
 * and cublasLtMatmul with bias epilogues and batches. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "fp16.h"

#define CHECK_RT(call)   cr_assert_eq((call), cudaSuccess, "%s", #call)
#define CHECK_BLAS(call) cr_assert_eq((call), CUBLAS_STATUS_SUCCESS, "%s", #call)

/* cublas_api.h declares the half-precision GEMMs only for C++ (__half). */
cublasStatus_t cublasHgemm(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                           const uint16_t *, const uint16_t *, int, const uint16_t *, int,
                           const uint16_t *, uint16_t *, int);

/* ---- host-side operands with a float64 reference ---- */

typedef struct operand {
    cudaDataType_t type;
    int64_t rows, cols, ld, batch, stride; /* stride in elements between batch members */
    void *host, *dev;
} operand;

static uint64_t rng = 12345;

static double uniform(void)
{
    rng = rng * 6364136223846793005u + 1442695040888963407u;
    return (double)(rng >> 11) / (double)(1ull << 53) * 2.0 - 1.0;
}

static size_t type_size(cudaDataType_t t)
{
    return t == CUDA_R_64F ? 8 : t == CUDA_R_32F ? 4 : 2;
}

static double load(const operand *x, int64_t idx)
{
    switch (x->type) {
    case CUDA_R_64F:
        return ((double *)x->host)[idx];
    case CUDA_R_32F:
        return ((float *)x->host)[idx];
    case CUDA_R_16F:
        return fp16_half_to_float(((uint16_t *)x->host)[idx]);
    default:
        return fp16_bf16_to_float(((uint16_t *)x->host)[idx]);
    }
}

static void store(operand *x, int64_t idx, double v)
{
    switch (x->type) {
    case CUDA_R_64F:
        ((double *)x->host)[idx] = v;
        break;
    case CUDA_R_32F:
        ((float *)x->host)[idx] = (float)v;
        break;
    case CUDA_R_16F:
        ((uint16_t *)x->host)[idx] = fp16_float_to_half((float)v);
        break;
    default:
        ((uint16_t *)x->host)[idx] = fp16_float_to_bf16((float)v);
        break;
    }
}

static size_t bytes_of(const operand *x)
{
    return type_size(x->type) * (size_t)(x->stride * (x->batch - 1) + x->ld * x->cols);
}

/* Random values, copied to a fresh device buffer; ld is padded by 2 to catch ld mistakes. */
static operand make(cudaDataType_t type, int64_t rows, int64_t cols, int64_t batch)
{
    operand x = {.type = type, .rows = rows, .cols = cols, .ld = rows + 2, .batch = batch};
    x.stride = x.ld * cols + 5;
    x.host = malloc(bytes_of(&x));
    for (int64_t i = 0; i < (int64_t)(bytes_of(&x) / type_size(type)); i++)
        store(&x, i, uniform());
    CHECK_RT(cudaMalloc(&x.dev, bytes_of(&x)));
    CHECK_RT(cudaMemcpy(x.dev, x.host, bytes_of(&x), cudaMemcpyHostToDevice));
    return x;
}

static void download(operand *x)
{
    CHECK_RT(cudaMemcpy(x->host, x->dev, bytes_of(x), cudaMemcpyDeviceToHost));
}

static void drop(operand *x)
{
    CHECK_RT(cudaFree(x->dev));
    free(x->host);
}

static double element(const operand *x, int64_t b, int64_t r, int64_t c)
{
    return load(x, b * x->stride + r * 1 + c * x->ld);
}

static double ulp(cudaDataType_t t)
{
    return t == CUDA_R_64F   ? 0x1p-52
           : t == CUDA_R_32F ? 0x1p-23
           : t == CUDA_R_16F ? 0x1p-10
                             : 0x1p-7;
}

/* Checks D = alpha op(A) op(B) + beta C0 (+ bias[i]) for every batch member, within the
 * accumulation error of fp32 (or fp64) plus the rounding of the output type. */
static void verify(const operand *a, bool ta, const operand *b, bool tb, const operand *c0,
                   const operand *d, double alpha, double beta, const operand *bias, bool f64)
{
    int64_t m = d->rows, n = d->cols, k = ta ? a->rows : a->cols;
    double eps = f64 ? 0x1p-52 : 0x1p-23;
    for (int64_t bt = 0; bt < d->batch; bt++)
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < m; i++) {
                double ref = 0, mag = 0;
                for (int64_t l = 0; l < k; l++) {
                    double x = ta ? element(a, bt, l, i) : element(a, bt, i, l);
                    double y = tb ? element(b, bt, j, l) : element(b, bt, l, j);
                    ref += x * y;
                    mag += fabs(x * y);
                }
                ref = alpha * ref + (beta != 0 ? beta * element(c0, bt, i, j) : 0);
                if (bias)
                    ref += element(bias, 0, i, 0);
                double tol =
                    (k + 4) * eps * (fabs(alpha) * mag + fabs(ref) + 1) + ulp(d->type) * fabs(ref);
                double got = element(d, bt, i, j);
                cr_assert(fabs(got - ref) <= tol,
                          "batch %ld (%ld,%ld) of %ldx%ldx%ld ta%d tb%d: got %.9g want %.9g",
                          (long)bt, (long)i, (long)j, (long)m, (long)n, (long)k, ta, tb, got, ref);
            }
}

static cublasHandle_t handle;

static void setup(void)
{
    CHECK_BLAS(cublasCreate(&handle));
}

static void teardown(void)
{
    CHECK_BLAS(cublasDestroy(handle));
}

static const int sizes[][3] = {{1, 1, 1}, {5, 3, 7}, {33, 18, 65}, {130, 7, 9}, {17, 131, 40}};
#define NSIZES (int)(sizeof sizes / sizeof sizes[0])

static cublasOperation_t op_of(bool t)
{
    return t ? CUBLAS_OP_T : CUBLAS_OP_N;
}

/* ---- handle and workspace ---- */

Test(sim_cublas, driver_is_dlopened_by_cublas_not_linked)
{
    cr_assert_null(dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD));
    cublasHandle_t h;
    CHECK_BLAS(cublasCreate(&h));
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    cr_assert_not_null(driver);
    dlclose(driver);
    CHECK_BLAS(cublasDestroy(h));
}

Test(sim_cublas, workspace_is_allocated_through_the_driver)
{
    size_t free0, free1, free2, total;
    CHECK_RT(cudaMemGetInfo(&free0, &total));
    cublasHandle_t h;
    CHECK_BLAS(cublasCreate(&h));
    CHECK_RT(cudaMemGetInfo(&free1, &total));
    cr_assert_eq(free0 - free1, (size_t)4 << 20, "default workspace: 4 MiB");
    void *own;
    CHECK_RT(cudaMalloc(&own, 1 << 20));
    CHECK_BLAS(cublasSetWorkspace(h, own, 1 << 20));
    CHECK_RT(cudaMemGetInfo(&free2, &total));
    cr_assert_eq(free2, free1 + ((size_t)3 << 20), "default workspace freed, 1 MiB user buffer");
    CHECK_BLAS(cublasDestroy(h));
    CHECK_RT(cudaFree(own));
    CHECK_RT(cudaMemGetInfo(&free2, &total));
    cr_assert_eq(free2, free0);
}

Test(sim_cublas, create_fails_cleanly_when_the_workspace_does_not_fit)
{
    size_t free_bytes, total;
    void *hog;
    CHECK_RT(cudaMemGetInfo(&free_bytes, &total));
    CHECK_RT(cudaMalloc(&hog, free_bytes - ((size_t)1 << 20)));
    cublasHandle_t h = (cublasHandle_t)&h;
    cr_assert_eq(cublasCreate(&h), CUBLAS_STATUS_ALLOC_FAILED);
    cr_assert_null(h);
    CHECK_RT(cudaFree(hog));
    CHECK_BLAS(cublasCreate(&h));
    CHECK_BLAS(cublasDestroy(h));
}

Test(sim_cublas, handle_settings, .init = setup, .fini = teardown)
{
    cudaStream_t s, got;
    CHECK_RT(cudaStreamCreate(&s));
    CHECK_BLAS(cublasSetStream(handle, s));
    CHECK_BLAS(cublasGetStream(handle, &got));
    cr_assert_eq(got, s);
    cublasMath_t math;
    CHECK_BLAS(cublasSetMathMode(handle, CUBLAS_TF32_TENSOR_OP_MATH));
    CHECK_BLAS(cublasGetMathMode(handle, &math));
    cr_assert_eq(math, CUBLAS_TF32_TENSOR_OP_MATH);
    cublasPointerMode_t mode;
    CHECK_BLAS(cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_DEVICE));
    CHECK_BLAS(cublasGetPointerMode(handle, &mode));
    cr_assert_eq(mode, CUBLAS_POINTER_MODE_DEVICE);
    cr_assert_eq(cublasSetPointerMode(handle, (cublasPointerMode_t)7), CUBLAS_STATUS_INVALID_VALUE);
    int version = 0;
    CHECK_BLAS(cublasGetVersion(handle, &version));
    cr_assert_eq(version, CUBLAS_VERSION);
    cr_assert_str_eq(cublasGetStatusName(CUBLAS_STATUS_NOT_SUPPORTED),
                     "CUBLAS_STATUS_NOT_SUPPORTED");
    int major = 0;
    CHECK_BLAS(cublasGetProperty(MAJOR_VERSION, &major));
    cr_assert_eq(major, 13);
    cr_assert_str_eq(cublasLtGetStatusName(CUBLAS_STATUS_INVALID_VALUE),
                     "CUBLAS_STATUS_INVALID_VALUE");
    CHECK_RT(cudaStreamDestroy(s));
}

/* ---- typed GEMMs ---- */

Test(sim_cublas, sgemm_all_transposes_odd_sizes, .init = setup, .fini = teardown)
{
    for (int z = 0; z < NSIZES; z++)
        for (int t = 0; t < 4; t++) {
            bool ta = t & 1, tb = t >> 1;
            int m = sizes[z][0], n = sizes[z][1], k = sizes[z][2];
            operand a = make(CUDA_R_32F, ta ? k : m, ta ? m : k, 1);
            operand b = make(CUDA_R_32F, tb ? n : k, tb ? k : n, 1);
            operand c = make(CUDA_R_32F, m, n, 1), c0 = c;
            c0.host = malloc(bytes_of(&c));
            memcpy(c0.host, c.host, bytes_of(&c));
            float alpha = 1.25f, beta = (t == 3) ? 0.0f : -0.5f;
            if (z % 2)
                CHECK_BLAS(cublasSgemm(handle, op_of(ta), op_of(tb), m, n, k, &alpha, a.dev,
                                       (int)a.ld, b.dev, (int)b.ld, &beta, c.dev, (int)c.ld));
            else
                CHECK_BLAS(cublasSgemm_v2_64(handle, op_of(ta), op_of(tb), m, n, k, &alpha, a.dev,
                                             a.ld, b.dev, b.ld, &beta, c.dev, c.ld));
            download(&c);
            verify(&a, ta, &b, tb, &c0, &c, alpha, beta, NULL, false);
            free(c0.host);
            drop(&a), drop(&b), drop(&c);
        }
}

Test(sim_cublas, dgemm_and_hgemm, .init = setup, .fini = teardown)
{
    for (int t = 0; t < 4; t++) {
        bool ta = t & 1, tb = t >> 1;
        int m = 19, n = 23, k = 29;
        operand a = make(CUDA_R_64F, ta ? k : m, ta ? m : k, 1);
        operand b = make(CUDA_R_64F, tb ? n : k, tb ? k : n, 1);
        operand c = make(CUDA_R_64F, m, n, 1);
        double alpha = 0.5, beta = 0;
        CHECK_BLAS(cublasDgemm(handle, op_of(ta), op_of(tb), m, n, k, &alpha, a.dev, (int)a.ld,
                               b.dev, (int)b.ld, &beta, c.dev, (int)c.ld));
        download(&c);
        verify(&a, ta, &b, tb, &c, &c, alpha, beta, NULL, true);
        drop(&a), drop(&b), drop(&c);

        operand ha = make(CUDA_R_16F, ta ? k : m, ta ? m : k, 1);
        operand hb = make(CUDA_R_16F, tb ? n : k, tb ? k : n, 1);
        operand hc = make(CUDA_R_16F, m, n, 1);
        uint16_t h_alpha = fp16_float_to_half(2.0f), h_beta = fp16_float_to_half(0.0f);
        CHECK_BLAS(cublasHgemm(handle, op_of(ta), op_of(tb), m, n, k, &h_alpha, ha.dev, (int)ha.ld,
                               hb.dev, (int)hb.ld, &h_beta, hc.dev, (int)hc.ld));
        download(&hc);
        verify(&ha, ta, &hb, tb, &hc, &hc, 2.0, 0.0, NULL, false);
        drop(&ha), drop(&hb), drop(&hc);
    }
}

/* ---- GemmEx: fp32, fp16 and bf16 inputs, fp32 compute ---- */

static void gemm_ex_case(cudaDataType_t in, cudaDataType_t out, bool ta, bool tb, bool use64)
{
    int m = 21, n = 10, k = 35;
    operand a = make(in, ta ? k : m, ta ? m : k, 1);
    operand b = make(in, tb ? n : k, tb ? k : n, 1);
    operand c = make(out, m, n, 1), c0 = c;
    c0.host = malloc(bytes_of(&c));
    memcpy(c0.host, c.host, bytes_of(&c));
    float alpha = 1.0f, beta = 1.0f;
    if (use64)
        CHECK_BLAS(cublasGemmEx_64(handle, op_of(ta), op_of(tb), m, n, k, &alpha, a.dev, in, a.ld,
                                   b.dev, in, b.ld, &beta, c.dev, out, c.ld, CUBLAS_COMPUTE_32F,
                                   CUBLAS_GEMM_DEFAULT));
    else
        CHECK_BLAS(cublasGemmEx(handle, op_of(ta), op_of(tb), m, n, k, &alpha, a.dev, in, (int)a.ld,
                                b.dev, in, (int)b.ld, &beta, c.dev, out, (int)c.ld,
                                CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT_TENSOR_OP));
    download(&c);
    verify(&a, ta, &b, tb, &c0, &c, alpha, beta, NULL, false);
    free(c0.host);
    drop(&a), drop(&b), drop(&c);
}

Test(sim_cublas, gemm_ex_input_types, .init = setup, .fini = teardown)
{
    cudaDataType_t ins[] = {CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF};
    for (int x = 0; x < 3; x++)
        for (int t = 0; t < 4; t++) {
            gemm_ex_case(ins[x], CUDA_R_32F, t & 1, t >> 1, t == 2);
            gemm_ex_case(ins[x], ins[x], t & 1, t >> 1, t == 1);
        }
}

Test(sim_cublas, gemm_ex_rejects_what_it_cannot_compute, .init = setup, .fini = teardown)
{
    float one = 1.0f, x[16] = {0};
    void *d;
    CHECK_RT(cudaMalloc(&d, sizeof x));
    cr_assert_eq(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, d, CUDA_R_16F, 2, d,
                              CUDA_R_32F, 2, &one, d, CUDA_R_32F, 2, CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT),
                 CUBLAS_STATUS_NOT_SUPPORTED);
    cr_assert_eq(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, d, CUDA_R_32F, 2, d,
                              CUDA_R_32F, 2, &one, d, CUDA_R_32F, 2, CUBLAS_COMPUTE_32I,
                              CUBLAS_GEMM_DEFAULT),
                 CUBLAS_STATUS_NOT_SUPPORTED);
    cr_assert_eq(
        cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 4, 2, 2, &one, d, 3, d, 2, &one, d, 4),
        CUBLAS_STATUS_INVALID_VALUE, "lda < m");
    cr_assert_eq(
        cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, -1, 2, 2, &one, d, 3, d, 2, &one, d, 4),
        CUBLAS_STATUS_INVALID_VALUE);
    cr_assert_eq(cublasSgemm(NULL, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, d, 1, d, 1, &one, d, 1),
                 CUBLAS_STATUS_NOT_INITIALIZED);
    CHECK_BLAS(
        cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 0, 2, 2, &one, d, 1, d, 2, &one, d, 1));
    CHECK_RT(cudaFree(d));
}

Test(sim_cublas, device_pointer_mode, .init = setup, .fini = teardown)
{
    operand a = make(CUDA_R_32F, 9, 6, 1), b = make(CUDA_R_32F, 6, 4, 1);
    operand c = make(CUDA_R_32F, 9, 4, 1);
    float scalars[2] = {3.0f, 0.0f}, *d_scalars;
    CHECK_RT(cudaMalloc((void **)&d_scalars, sizeof scalars));
    CHECK_RT(cudaMemcpy(d_scalars, scalars, sizeof scalars, cudaMemcpyHostToDevice));
    CHECK_BLAS(cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_DEVICE));
    CHECK_BLAS(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 9, 4, 6, d_scalars, a.dev, (int)a.ld,
                           b.dev, (int)b.ld, d_scalars + 1, c.dev, (int)c.ld));
    download(&c);
    verify(&a, false, &b, false, &c, &c, 3.0, 0.0, NULL, false);
    CHECK_RT(cudaFree(d_scalars));
    drop(&a), drop(&b), drop(&c);
}

/* ---- batches ---- */

Test(sim_cublas, strided_batches, .init = setup, .fini = teardown)
{
    enum { BATCH = 3 };
    for (int t = 0; t < 4; t++) {
        bool ta = t & 1, tb = t >> 1;
        int m = 14, n = 9, k = 11;
        operand a = make(CUDA_R_32F, ta ? k : m, ta ? m : k, BATCH);
        operand b = make(CUDA_R_32F, tb ? n : k, tb ? k : n, BATCH);
        operand c = make(CUDA_R_32F, m, n, BATCH);
        float alpha = 1.0f, beta = 0.0f;
        if (t % 2)
            CHECK_BLAS(cublasSgemmStridedBatched(
                handle, op_of(ta), op_of(tb), m, n, k, &alpha, a.dev, (int)a.ld, a.stride, b.dev,
                (int)b.ld, b.stride, &beta, c.dev, (int)c.ld, c.stride, BATCH));
        else
            CHECK_BLAS(cublasSgemmStridedBatched_64(handle, op_of(ta), op_of(tb), m, n, k, &alpha,
                                                    a.dev, a.ld, a.stride, b.dev, b.ld, b.stride,
                                                    &beta, c.dev, c.ld, c.stride, BATCH));
        download(&c);
        verify(&a, ta, &b, tb, &c, &c, alpha, beta, NULL, false);
        drop(&a), drop(&b), drop(&c);

        operand ha = make(CUDA_R_16BF, ta ? k : m, ta ? m : k, BATCH);
        operand hb = make(CUDA_R_16BF, tb ? n : k, tb ? k : n, BATCH);
        operand hc = make(CUDA_R_32F, m, n, BATCH);
        if (t % 2)
            CHECK_BLAS(cublasGemmStridedBatchedEx(
                handle, op_of(ta), op_of(tb), m, n, k, &alpha, ha.dev, CUDA_R_16BF, (int)ha.ld,
                ha.stride, hb.dev, CUDA_R_16BF, (int)hb.ld, hb.stride, &beta, hc.dev, CUDA_R_32F,
                (int)hc.ld, hc.stride, BATCH, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        else
            CHECK_BLAS(cublasGemmStridedBatchedEx_64(
                handle, op_of(ta), op_of(tb), m, n, k, &alpha, ha.dev, CUDA_R_16BF, ha.ld,
                ha.stride, hb.dev, CUDA_R_16BF, hb.ld, hb.stride, &beta, hc.dev, CUDA_R_32F, hc.ld,
                hc.stride, BATCH, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        download(&hc);
        verify(&ha, ta, &hb, tb, &hc, &hc, alpha, beta, NULL, false);
        drop(&ha), drop(&hb), drop(&hc);
    }
}

/* Pointer arrays live in device memory, as cuBLAS requires. */
Test(sim_cublas, pointer_array_batches, .init = setup, .fini = teardown)
{
    enum { BATCH = 4 };
    int m = 12, n = 7, k = 5;
    operand a = make(CUDA_R_16F, k, m, BATCH), b = make(CUDA_R_16F, k, n, BATCH);
    operand c = make(CUDA_R_32F, m, n, BATCH);
    const void *ha[BATCH], *hb[BATCH];
    void *hc[BATCH];
    for (int i = 0; i < BATCH; i++) {
        ha[i] = (char *)a.dev + i * a.stride * 2;
        hb[i] = (char *)b.dev + i * b.stride * 2;
        hc[i] = (char *)c.dev + i * c.stride * 4;
    }
    void **d_arrays;
    CHECK_RT(cudaMalloc((void **)&d_arrays, 3 * sizeof ha));
    CHECK_RT(cudaMemcpy(d_arrays, ha, sizeof ha, cudaMemcpyHostToDevice));
    CHECK_RT(cudaMemcpy(d_arrays + BATCH, hb, sizeof hb, cudaMemcpyHostToDevice));
    CHECK_RT(cudaMemcpy(d_arrays + 2 * BATCH, hc, sizeof hc, cudaMemcpyHostToDevice));
    float alpha = -1.0f, beta = 0.0f;
    CHECK_BLAS(cublasGemmBatchedEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha,
                                   (const void *const *)d_arrays, CUDA_R_16F, (int)a.ld,
                                   (const void *const *)(d_arrays + BATCH), CUDA_R_16F, (int)b.ld,
                                   &beta, d_arrays + 2 * BATCH, CUDA_R_32F, (int)c.ld, BATCH,
                                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    download(&c);
    verify(&a, true, &b, false, &c, &c, alpha, beta, NULL, false);
    CHECK_BLAS(cublasGemmBatchedEx_64(
        handle, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, (const void *const *)d_arrays,
        CUDA_R_16F, a.ld, (const void *const *)(d_arrays + BATCH), CUDA_R_16F, b.ld, &beta,
        d_arrays + 2 * BATCH, CUDA_R_32F, c.ld, BATCH, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    download(&c);
    verify(&a, true, &b, false, &c, &c, alpha, beta, NULL, false);
    CHECK_RT(cudaFree(d_arrays));
    drop(&a), drop(&b), drop(&c);
}

/* ---- cuBLASLt ---- */

typedef struct lt_case {
    cudaDataType_t in, out;
    bool ta, tb;
    int m, n, k, batch;
    cublasLtEpilogue_t epilogue;
    float beta;
} lt_case;

static cublasLtMatrixLayout_t lt_layout(const operand *x)
{
    cublasLtMatrixLayout_t l;
    CHECK_BLAS(
        cublasLtMatrixLayoutCreate(&l, x->type, (uint64_t)x->rows, (uint64_t)x->cols, x->ld));
    int32_t batch = (int32_t)x->batch;
    int64_t stride = x->stride;
    CHECK_BLAS(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
                                                sizeof batch));
    CHECK_BLAS(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                &stride, sizeof stride));
    return l;
}

static void lt_run(cublasLtHandle_t lt, const lt_case *s)
{
    operand a = make(s->in, s->ta ? s->k : s->m, s->ta ? s->m : s->k, s->batch);
    operand b = make(s->in, s->tb ? s->n : s->k, s->tb ? s->k : s->n, s->batch);
    operand c = make(s->out, s->m, s->n, s->batch), d = make(s->out, s->m, s->n, s->batch);
    operand bias = make(s->out, s->m, 1, 1);
    cublasLtMatmulDesc_t desc;
    CHECK_BLAS(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    int32_t ta = op_of(s->ta), tb = op_of(s->tb);
    uint32_t epi = s->epilogue;
    CHECK_BLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CHECK_BLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    CHECK_BLAS(
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    CHECK_BLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias.dev,
                                              sizeof bias.dev));
    cublasLtMatrixLayout_t la = lt_layout(&a), lb = lt_layout(&b), lc = lt_layout(&c),
                           ld = lt_layout(&d);
    cublasLtMatmulPreference_t pref;
    CHECK_BLAS(cublasLtMatmulPreferenceCreate(&pref));
    uint64_t ws = 1 << 20;
    CHECK_BLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                    &ws, sizeof ws));
    cublasLtMatmulHeuristicResult_t result;
    int found = 0;
    CHECK_BLAS(cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, ld, pref, 1, &result, &found));
    cr_assert_eq(found, 1);
    cr_assert_eq(result.state, CUBLAS_STATUS_SUCCESS);
    float alpha = 0.75f;
    CHECK_BLAS(cublasLtMatmul(lt, desc, &alpha, a.dev, la, b.dev, lb, &s->beta, c.dev, lc, d.dev,
                              ld, &result.algo, NULL, 0, 0));
    download(&d);
    bool with_bias = s->epilogue == CUBLASLT_EPILOGUE_BIAS;
    verify(&a, s->ta, &b, s->tb, &c, &d, alpha, s->beta, with_bias ? &bias : NULL, false);
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la), cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc), cublasLtMatrixLayoutDestroy(ld);
    cublasLtMatmulDescDestroy(desc);
    drop(&a), drop(&b), drop(&c), drop(&d), drop(&bias);
}

Test(sim_cublaslt, matmul_bias_batches_transposes)
{
    cublasLtHandle_t lt;
    CHECK_BLAS(cublasLtCreate(&lt));
    for (int t = 0; t < 4; t++) {
        lt_case s = {CUDA_R_32F, CUDA_R_32F, t & 1, t >> 1, 13, 6, 17, 1, CUBLASLT_EPILOGUE_BIAS,
                     0.0f};
        lt_run(lt, &s);
        s.epilogue = CUBLASLT_EPILOGUE_DEFAULT;
        s.beta = 0.5f;
        s.batch = 3;
        lt_run(lt, &s);
        s.in = s.out = CUDA_R_16BF;
        s.epilogue = CUBLASLT_EPILOGUE_BIAS;
        lt_run(lt, &s);
        s.in = CUDA_R_16F;
        s.out = CUDA_R_32F;
        s.m = 130;
        lt_run(lt, &s);
    }
    CHECK_BLAS(cublasLtDestroy(lt));
}

Test(sim_cublaslt, relu_bias_epilogue)
{
    cublasLtHandle_t lt;
    CHECK_BLAS(cublasLtCreate(&lt));
    operand a = make(CUDA_R_32F, 8, 5, 1), b = make(CUDA_R_32F, 5, 6, 1);
    operand d = make(CUDA_R_32F, 8, 6, 1), bias = make(CUDA_R_32F, 8, 1, 1);
    cublasLtMatmulDesc_t desc;
    CHECK_BLAS(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    uint32_t epi = CUBLASLT_EPILOGUE_RELU_BIAS;
    CHECK_BLAS(
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    CHECK_BLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias.dev,
                                              sizeof bias.dev));
    cublasLtMatrixLayout_t la = lt_layout(&a), lb = lt_layout(&b), ld = lt_layout(&d);
    float alpha = 1.0f, beta = 0.0f;
    CHECK_BLAS(cublasLtMatmul(lt, desc, &alpha, a.dev, la, b.dev, lb, &beta, d.dev, ld, d.dev, ld,
                              NULL, NULL, 0, 0));
    download(&d);
    for (int j = 0; j < 6; j++)
        for (int i = 0; i < 8; i++) {
            double ref = element(&bias, 0, i, 0);
            for (int l = 0; l < 5; l++)
                ref += element(&a, 0, i, l) * element(&b, 0, l, j);
            ref = ref < 0 ? 0 : ref;
            cr_assert_float_eq(element(&d, 0, i, j), ref, 1e-5);
        }
    cublasLtMatrixLayoutDestroy(la), cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(ld), cublasLtMatmulDescDestroy(desc);
    drop(&a), drop(&b), drop(&d), drop(&bias);
    CHECK_BLAS(cublasLtDestroy(lt));
}

Test(sim_cublaslt, descriptor_attributes_round_trip)
{
    cublasLtMatmulDesc_t desc;
    CHECK_BLAS(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    int32_t ta = CUBLAS_OP_T, got = 0, scale = 0;
    size_t written = 0;
    CHECK_BLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CHECK_BLAS(cublasLtMatmulDescGetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &got, sizeof got,
                                              &written));
    cr_assert_eq(got, CUBLAS_OP_T);
    cr_assert_eq(written, sizeof got);
    CHECK_BLAS(cublasLtMatmulDescGetAttribute(desc, CUBLASLT_MATMUL_DESC_SCALE_TYPE, &scale,
                                              sizeof scale, NULL));
    cr_assert_eq(scale, CUDA_R_32F);
    CHECK_BLAS(
        cublasLtMatmulDescGetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, NULL, 0, &written));
    cr_assert_eq(written, sizeof(void *));
    int64_t wrong = 1;
    cr_assert_eq(
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &wrong, sizeof wrong),
        CUBLAS_STATUS_INVALID_VALUE);
    cublasLtMatmulDescDestroy(desc);

    cublasLtMatrixLayout_t l;
    CHECK_BLAS(cublasLtMatrixLayoutCreate(&l, CUDA_R_16BF, 10, 20, 16));
    uint64_t rows = 0;
    int32_t order = -1, batch = 0;
    CHECK_BLAS(
        cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ROWS, &rows, sizeof rows, NULL));
    CHECK_BLAS(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ORDER, &order,
                                                sizeof order, NULL));
    CHECK_BLAS(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
                                                sizeof batch, NULL));
    cr_assert_eq(rows, 10);
    cr_assert_eq(order, CUBLASLT_ORDER_COL);
    cr_assert_eq(batch, 1);
    cublasLtMatrixLayoutDestroy(l);
}

Test(sim_cublaslt, unsupported_requests_are_refused)
{
    cublasLtHandle_t lt;
    CHECK_BLAS(cublasLtCreate(&lt));
    operand a = make(CUDA_R_32F, 4, 4, 1);
    cublasLtMatmulDesc_t desc;
    CHECK_BLAS(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasLtMatrixLayout_t l = lt_layout(&a), wrong;
    CHECK_BLAS(cublasLtMatrixLayoutCreate(&wrong, CUDA_R_32F, 3, 4, 4));
    float one = 1.0f;
    uint32_t epi = CUBLASLT_EPILOGUE_DGELU;
    cr_assert_eq(cublasLtMatmul(lt, desc, &one, a.dev, l, a.dev, wrong, &one, a.dev, l, a.dev, l,
                                NULL, NULL, 0, 0),
                 CUBLAS_STATUS_INVALID_VALUE, "k of A and B differ");
    CHECK_BLAS(
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    cr_assert_eq(cublasLtMatmul(lt, desc, &one, a.dev, l, a.dev, l, &one, a.dev, l, a.dev, l, NULL,
                                NULL, 0, 0),
                 CUBLAS_STATUS_NOT_SUPPORTED);
    cublasLtMatrixLayoutDestroy(l), cublasLtMatrixLayoutDestroy(wrong);
    cublasLtMatmulDescDestroy(desc);
    drop(&a);
    CHECK_BLAS(cublasLtDestroy(lt));
}

/* ---- accounting in the driver's SIMCUDA_STATS ---- */

static unsigned long long stats_field(const char *json, const char *key)
{
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\":", key);
    const char *at = strstr(json, pattern);
    cr_assert_not_null(at, "%s missing in %s", key, json);
    return strtoull(at + strlen(pattern), NULL, 10);
}

/* Runs in a child so that the driver writes its statistics on exit. */
static void gemms_then_exit(const char *stats_path)
{
    setenv("SIMCUDA_STATS", stats_path, 1);
    cublasHandle_t h;
    cublasLtHandle_t lt;
    float one = 1.0f, zero = 0.0f, host[64] = {0};
    void *d;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS || cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS ||
        cudaMalloc(&d, sizeof host) != cudaSuccess ||
        cudaMemcpy(d, host, sizeof host, cudaMemcpyHostToDevice) != cudaSuccess)
        _exit(2);
    for (int i = 0; i < 3; i++)
        if (cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, d, 4, d, 4, &zero, d, 4))
            _exit(3);
    /* A batch of 5 is still one call. */
    if (cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, d, 2, 4, d, 2, 4,
                                  &zero, d, 2, 4, 5))
        _exit(4);
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t l;
    if (cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) ||
        cublasLtMatrixLayoutCreate(&l, CUDA_R_32F, 4, 4, 4) ||
        cublasLtMatmul(lt, desc, &one, d, l, d, l, &zero, d, l, d, l, NULL, NULL, 0, 0))
        _exit(5);
    if (cudaMemcpy(host, d, sizeof host, cudaMemcpyDeviceToHost) != cudaSuccess)
        _exit(6);
    exit(0);
}

Test(sim_cublas, gemm_calls_and_copies_reach_simcuda_stats)
{
    char path[] = "/tmp/sim_cublas_stats_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0)
        gemms_then_exit(path);
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
    char json[4096] = {0};
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    cr_assert_gt(fread(json, 1, sizeof json - 1, f), 0);
    fclose(f);
    unlink(path);
    cr_assert_eq(stats_field(json, "gemm_calls"), 5);
    cr_assert_eq(stats_field(json, "bytes_copied_h2d"), 64 * sizeof(float));
    cr_assert_eq(stats_field(json, "bytes_copied_d2h"), 64 * sizeof(float));
    /* The 4 MiB default workspace was an allocation the driver saw. */
    cr_assert_geq(stats_field(json, "allocations"), 2);
}
