/* cublas_gemm: every cuBLAS GEMM entry point, as one validated call description run on the CPU
 * kernels of gemm_cpu. Each API call counts as one GEMM in SIMCUDA_STATS, whatever its batch. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include <cublasLt.h>

#include "blas_driver.h"
#include "cublas_handle.h"
#include "fp16.h"
#include "gemm_cpu.h"

typedef struct gemm_call {
    cublasHandle_t handle;
    cublasOperation_t transa, transb;
    int64_t m, n, k;
    const void *alpha, *beta;
    cudaDataType_t scale_type, a_type, b_type, c_type;
    int64_t lda, ldb, ldc;
    bool compute_f64;
    int64_t batch;
} gemm_call;

static bool valid_op(cublasOperation_t op)
{
    return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C;
}

static int64_t max1(int64_t v)
{
    return v > 1 ? v : 1;
}

static cublasStatus_t validate(const gemm_call *c)
{
    if (!c->handle)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!valid_op(c->transa) || !valid_op(c->transb) || c->m < 0 || c->n < 0 || c->k < 0 ||
        c->batch < 0 || !c->alpha || !c->beta)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (c->lda < max1(c->transa == CUBLAS_OP_N ? c->m : c->k) ||
        c->ldb < max1(c->transb == CUBLAS_OP_N ? c->k : c->n) || c->ldc < max1(c->m))
        return CUBLAS_STATUS_INVALID_VALUE;
    return CUBLAS_STATUS_SUCCESS;
}

/* alpha and beta are readable in either pointer mode: simulated device memory is host memory. */
static double load_scalar(const void *p, cudaDataType_t type)
{
    switch (type) {
    case CUDA_R_64F:
        return *(const double *)p;
    case CUDA_R_16F:
        return fp16_half_to_float(*(const uint16_t *)p);
    default:
        return *(const float *)p;
    }
}

static gemm_problem make_problem(const gemm_call *c, const void *a, const void *b, void *cm)
{
    return (gemm_problem){
        .m = c->m,
        .n = c->n,
        .k = c->k,
        .a = {.data = a, .type = c->a_type, .ld = c->lda, .trans = c->transa != CUBLAS_OP_N},
        .b = {.data = b, .type = c->b_type, .ld = c->ldb, .trans = c->transb != CUBLAS_OP_N},
        .c = {.data = cm, .type = c->c_type, .ld = c->ldc},
        .d = cm,
        .d_type = c->c_type,
        .ldd = c->ldc,
        .alpha = load_scalar(c->alpha, c->scale_type),
        .beta = load_scalar(c->beta, c->scale_type),
        .compute_f64 = c->compute_f64,
    };
}

static cublasStatus_t run_strided(const gemm_call *c, const void *a, long long stride_a,
                                  const void *b, long long stride_b, void *cm, long long stride_c)
{
    cublasStatus_t st = validate(c);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    blasdrv_count_gemm();
    if (!blasdrv_compute())
        return CUBLAS_STATUS_SUCCESS;
    size_t as = gemm_type_size(c->a_type), bs = gemm_type_size(c->b_type);
    size_t cs = gemm_type_size(c->c_type);
    for (int64_t i = 0; i < c->batch; i++) {
        gemm_problem p = make_problem(c, (const char *)a + i * stride_a * (long long)as,
                                      (const char *)b + i * stride_b * (long long)bs,
                                      (char *)cm + i * stride_c * (long long)cs);
        if (gemm_compute(&p) != 0)
            return CUBLAS_STATUS_ALLOC_FAILED;
    }
    return CUBLAS_STATUS_SUCCESS;
}

/* The pointer arrays live in (simulated) device memory, readable from the host. */
static cublasStatus_t run_arrays(const gemm_call *c, const void *const a[], const void *const b[],
                                 void *const cm[])
{
    cublasStatus_t st = validate(c);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    if (c->batch > 0 && (!a || !b || !cm))
        return CUBLAS_STATUS_INVALID_VALUE;
    blasdrv_count_gemm();
    if (!blasdrv_compute())
        return CUBLAS_STATUS_SUCCESS;
    for (int64_t i = 0; i < c->batch; i++) {
        gemm_problem p = make_problem(c, a[i], b[i], cm[i]);
        if (gemm_compute(&p) != 0)
            return CUBLAS_STATUS_ALLOC_FAILED;
    }
    return CUBLAS_STATUS_SUCCESS;
}

/* Which inputs each compute type accepts, and the type of its alpha/beta. */
static cublasStatus_t resolve_compute(gemm_call *c, cublasComputeType_t compute)
{
    bool ab_same = c->a_type == c->b_type;
    switch (compute) {
    case CUBLAS_COMPUTE_32F:
    case CUBLAS_COMPUTE_32F_PEDANTIC:
    case CUBLAS_COMPUTE_32F_FAST_16F:
    case CUBLAS_COMPUTE_32F_FAST_16BF:
    case CUBLAS_COMPUTE_32F_FAST_TF32:
    case CUBLAS_COMPUTE_32F_EMULATED_16BFX9:
        c->scale_type = CUDA_R_32F;
        c->compute_f64 = false;
        if (!ab_same ||
            (c->a_type != CUDA_R_32F && c->a_type != CUDA_R_16F && c->a_type != CUDA_R_16BF))
            return CUBLAS_STATUS_NOT_SUPPORTED;
        return c->c_type == CUDA_R_32F || c->c_type == c->a_type ? CUBLAS_STATUS_SUCCESS
                                                                 : CUBLAS_STATUS_NOT_SUPPORTED;
    case CUBLAS_COMPUTE_64F:
    case CUBLAS_COMPUTE_64F_PEDANTIC:
    case CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT:
        c->scale_type = CUDA_R_64F;
        c->compute_f64 = true;
        return ab_same && c->a_type == CUDA_R_64F && c->c_type == CUDA_R_64F
                   ? CUBLAS_STATUS_SUCCESS
                   : CUBLAS_STATUS_NOT_SUPPORTED;
    case CUBLAS_COMPUTE_16F:
    case CUBLAS_COMPUTE_16F_PEDANTIC:
        /* fp16 compute accumulates in fp32 here; only the scalars and output are half. */
        c->scale_type = CUDA_R_16F;
        c->compute_f64 = false;
        return ab_same && c->a_type == CUDA_R_16F && c->c_type == CUDA_R_16F
                   ? CUBLAS_STATUS_SUCCESS
                   : CUBLAS_STATUS_NOT_SUPPORTED;
    default:
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
}

static gemm_call typed_call(cublasHandle_t handle, cublasOperation_t transa,
                            cublasOperation_t transb, int64_t m, int64_t n, int64_t k,
                            const void *alpha, int64_t lda, int64_t ldb, const void *beta,
                            int64_t ldc, cudaDataType_t type, int64_t batch)
{
    return (gemm_call){.handle = handle,
                       .transa = transa,
                       .transb = transb,
                       .m = m,
                       .n = n,
                       .k = k,
                       .alpha = alpha,
                       .beta = beta,
                       .scale_type = type,
                       .a_type = type,
                       .b_type = type,
                       .c_type = type,
                       .lda = lda,
                       .ldb = ldb,
                       .ldc = ldc,
                       .compute_f64 = type == CUDA_R_64F,
                       .batch = batch};
}

static gemm_call ex_call(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                         int64_t m, int64_t n, int64_t k, const void *alpha, cudaDataType a_type,
                         int64_t lda, cudaDataType b_type, int64_t ldb, const void *beta,
                         cudaDataType c_type, int64_t ldc, int64_t batch)
{
    return (gemm_call){.handle = handle,
                       .transa = transa,
                       .transb = transb,
                       .m = m,
                       .n = n,
                       .k = k,
                       .alpha = alpha,
                       .beta = beta,
                       .a_type = a_type,
                       .b_type = b_type,
                       .c_type = c_type,
                       .lda = lda,
                       .ldb = ldb,
                       .ldc = ldc,
                       .batch = batch};
}

/* ---- routing through cuBLASLt ---- */

/* SIMCUDA_CUBLAS_LT=1 sends single fp32 GEMMs through cublasLtMatmul, as the real libcublas
 * routes many GEMMs through cuBLASLt. The call binds through the global scope like any call
 * into another library, so a preloaded tool sees the inner call (and must count it once). */
static bool via_lt(void)
{
    static int on = -1; /* racing first calls store the same value */
    if (on < 0) {
        const char *e = getenv("SIMCUDA_CUBLAS_LT");
        on = e && e[0] == '1';
    }
    return on == 1;
}

static cublasStatus_t sgemm_lt(cublasHandle_t handle, cublasOperation_t transa,
                               cublasOperation_t transb, int64_t m, int64_t n, int64_t k,
                               const float *alpha, const float *A, int64_t lda, const float *B,
                               int64_t ldb, const float *beta, float *C, int64_t ldc)
{
    if (!handle)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (m < 0 || n < 0 || k < 0 || !valid_op(transa) || !valid_op(transb))
        return CUBLAS_STATUS_INVALID_VALUE;
    bool ta = transa != CUBLAS_OP_N, tb = transb != CUBLAS_OP_N;
    cublasLtHandle_t lt = NULL;
    cublasLtMatmulDesc_t md = NULL;
    cublasLtMatrixLayout_t la = NULL, lb = NULL, lc = NULL;
    int32_t opa = transa, opb = transb, mode = (int32_t)handle->pointer_mode;
    cublasStatus_t st = cublasLtCreate(&lt);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulDescCreate(&md, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulDescSetAttribute(md, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulDescSetAttribute(md, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulDescSetAttribute(md, CUBLASLT_MATMUL_DESC_POINTER_MODE, &mode,
                                            sizeof mode);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, (uint64_t)(ta ? k : m),
                                        (uint64_t)(ta ? m : k), lda);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, (uint64_t)(tb ? n : k),
                                        (uint64_t)(tb ? k : n), ldb);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, (uint64_t)m, (uint64_t)n, ldc);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmul(lt, md, alpha, A, la, B, lb, beta, C, lc, C, lc, NULL,
                            handle->workspace, handle->workspace_size, handle->stream);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatmulDescDestroy(md);
    cublasLtDestroy(lt);
    return st;
}

/* ---- single GEMMs ---- */

#define DEFINE_TYPED_GEMM(NAME, INT, T, TYPE)                                                      \
    cublasStatus_t NAME(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, \
                        INT m, INT n, INT k, const T *alpha, const T *A, INT lda, const T *B,      \
                        INT ldb, const T *beta, T *C, INT ldc)                                     \
    {                                                                                              \
        if (TYPE == CUDA_R_32F && via_lt())                                                        \
            return sgemm_lt(handle, transa, transb, m, n, k, (const float *)alpha,                 \
                            (const float *)A, lda, (const float *)B, ldb, (const float *)beta,     \
                            (float *)C, ldc);                                                      \
        gemm_call c =                                                                              \
            typed_call(handle, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc, TYPE, 1);      \
        return run_strided(&c, A, 0, B, 0, C, 0);                                                  \
    }

DEFINE_TYPED_GEMM(cublasSgemm_v2, int, float, CUDA_R_32F)
DEFINE_TYPED_GEMM(cublasSgemm_v2_64, int64_t, float, CUDA_R_32F)
DEFINE_TYPED_GEMM(cublasDgemm_v2, int, double, CUDA_R_64F)
DEFINE_TYPED_GEMM(cublasDgemm_v2_64, int64_t, double, CUDA_R_64F)
/* __half is a C++ type in cuda_fp16.h; the ABI is that of a pointer to 16-bit storage. */
DEFINE_TYPED_GEMM(cublasHgemm, int, uint16_t, CUDA_R_16F)
DEFINE_TYPED_GEMM(cublasHgemm_64, int64_t, uint16_t, CUDA_R_16F)

#define DEFINE_GEMM_EX(NAME, INT)                                                                  \
    cublasStatus_t NAME(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, \
                        INT m, INT n, INT k, const void *alpha, const void *A, cudaDataType Atype, \
                        INT lda, const void *B, cudaDataType Btype, INT ldb, const void *beta,     \
                        void *C, cudaDataType Ctype, INT ldc, cublasComputeType_t computeType,     \
                        cublasGemmAlgo_t algo)                                                     \
    {                                                                                              \
        (void)algo;                                                                                \
        gemm_call c = ex_call(handle, transa, transb, m, n, k, alpha, Atype, lda, Btype, ldb,      \
                              beta, Ctype, ldc, 1);                                                \
        cublasStatus_t st = resolve_compute(&c, computeType);                                      \
        return st != CUBLAS_STATUS_SUCCESS ? st : run_strided(&c, A, 0, B, 0, C, 0);               \
    }

DEFINE_GEMM_EX(cublasGemmEx, int)
DEFINE_GEMM_EX(cublasGemmEx_64, int64_t)

/* The fp32-compute GemmEx of cuBLAS 8 (its inputs may be fp16 or bf16). */
cublasStatus_t cublasSgemmEx(cublasHandle_t handle, cublasOperation_t transa,
                             cublasOperation_t transb, int m, int n, int k, const float *alpha,
                             const void *A, cudaDataType Atype, int lda, const void *B,
                             cudaDataType Btype, int ldb, const float *beta, void *C,
                             cudaDataType Ctype, int ldc)
{
    return cublasGemmEx(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta,
                        C, Ctype, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

/* ---- strided batches ---- */

#define DEFINE_TYPED_STRIDED(NAME, INT, T, TYPE)                                                   \
    cublasStatus_t NAME(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, \
                        INT m, INT n, INT k, const T *alpha, const T *A, INT lda,                  \
                        long long int strideA, const T *B, INT ldb, long long int strideB,         \
                        const T *beta, T *C, INT ldc, long long int strideC, INT batchCount)       \
    {                                                                                              \
        gemm_call c = typed_call(handle, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc,      \
                                 TYPE, batchCount);                                                \
        return run_strided(&c, A, strideA, B, strideB, C, strideC);                                \
    }

DEFINE_TYPED_STRIDED(cublasSgemmStridedBatched, int, float, CUDA_R_32F)
DEFINE_TYPED_STRIDED(cublasSgemmStridedBatched_64, int64_t, float, CUDA_R_32F)
DEFINE_TYPED_STRIDED(cublasDgemmStridedBatched, int, double, CUDA_R_64F)
DEFINE_TYPED_STRIDED(cublasDgemmStridedBatched_64, int64_t, double, CUDA_R_64F)
DEFINE_TYPED_STRIDED(cublasHgemmStridedBatched, int, uint16_t, CUDA_R_16F)
DEFINE_TYPED_STRIDED(cublasHgemmStridedBatched_64, int64_t, uint16_t, CUDA_R_16F)

#define DEFINE_STRIDED_EX(NAME, INT)                                                               \
    cublasStatus_t NAME(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, \
                        INT m, INT n, INT k, const void *alpha, const void *A, cudaDataType Atype, \
                        INT lda, long long int strideA, const void *B, cudaDataType Btype,         \
                        INT ldb, long long int strideB, const void *beta, void *C,                 \
                        cudaDataType Ctype, INT ldc, long long int strideC, INT batchCount,        \
                        cublasComputeType_t computeType, cublasGemmAlgo_t algo)                    \
    {                                                                                              \
        (void)algo;                                                                                \
        gemm_call c = ex_call(handle, transa, transb, m, n, k, alpha, Atype, lda, Btype, ldb,      \
                              beta, Ctype, ldc, batchCount);                                       \
        cublasStatus_t st = resolve_compute(&c, computeType);                                      \
        return st != CUBLAS_STATUS_SUCCESS ? st                                                    \
                                           : run_strided(&c, A, strideA, B, strideB, C, strideC);  \
    }

DEFINE_STRIDED_EX(cublasGemmStridedBatchedEx, int)
DEFINE_STRIDED_EX(cublasGemmStridedBatchedEx_64, int64_t)

/* ---- pointer-array batches ---- */

#define DEFINE_TYPED_BATCHED(NAME, INT, T, TYPE)                                                   \
    cublasStatus_t NAME(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, \
                        INT m, INT n, INT k, const T *alpha, const T *const Aarray[], INT lda,     \
                        const T *const Barray[], INT ldb, const T *beta, T *const Carray[],        \
                        INT ldc, INT batchCount)                                                   \
    {                                                                                              \
        gemm_call c = typed_call(handle, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc,      \
                                 TYPE, batchCount);                                                \
        return run_arrays(&c, (const void *const *)Aarray, (const void *const *)Barray,            \
                          (void *const *)Carray);                                                  \
    }

DEFINE_TYPED_BATCHED(cublasSgemmBatched, int, float, CUDA_R_32F)
DEFINE_TYPED_BATCHED(cublasSgemmBatched_64, int64_t, float, CUDA_R_32F)
DEFINE_TYPED_BATCHED(cublasDgemmBatched, int, double, CUDA_R_64F)
DEFINE_TYPED_BATCHED(cublasDgemmBatched_64, int64_t, double, CUDA_R_64F)

#define DEFINE_BATCHED_EX(NAME, INT)                                                               \
    cublasStatus_t NAME(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, \
                        INT m, INT n, INT k, const void *alpha, const void *const Aarray[],        \
                        cudaDataType Atype, INT lda, const void *const Barray[],                   \
                        cudaDataType Btype, INT ldb, const void *beta, void *const Carray[],       \
                        cudaDataType Ctype, INT ldc, INT batchCount,                               \
                        cublasComputeType_t computeType, cublasGemmAlgo_t algo)                    \
    {                                                                                              \
        (void)algo;                                                                                \
        gemm_call c = ex_call(handle, transa, transb, m, n, k, alpha, Atype, lda, Btype, ldb,      \
                              beta, Ctype, ldc, batchCount);                                       \
        cublasStatus_t st = resolve_compute(&c, computeType);                                      \
        return st != CUBLAS_STATUS_SUCCESS ? st : run_arrays(&c, Aarray, Barray, Carray);          \
    }

DEFINE_BATCHED_EX(cublasGemmBatchedEx, int)
DEFINE_BATCHED_EX(cublasGemmBatchedEx_64, int64_t)
