/* cublaslt_matmul: cublasLtMatmul and its heuristic, on the CPU kernels of gemm_cpu.
 *
 * Supported: column-major layouts, fp32/fp16/bf16 inputs with an fp32 compute type (and fp64,
 * fp16 as in cublas_gemm), host or device scalars, strided batches (a batch stride of 0
 * broadcasts an operand), and the epilogues DEFAULT, RELU, BIAS, RELU_BIAS, GELU, GELU_BIAS.
 * Anything else answers CUBLAS_STATUS_NOT_SUPPORTED rather than computing something else. */
#include <stdbool.h>
#include <string.h>

#include "blas_driver.h"
#include "cublaslt_types.h"
#include "fp16.h"
#include "gemm_cpu.h"

typedef struct lt_plan {
    gemm_problem p;
    int64_t batch;
    int64_t stride_a, stride_b, stride_c, stride_d, stride_bias; /* in bytes */
} lt_plan;

static bool valid(const void *body)
{
    return body && *(const uint64_t *)body == LT_DESC_MAGIC;
}

static bool epilogue_act(uint32_t epilogue, gemm_act *act, bool *bias)
{
    *bias = false;
    switch (epilogue) {
    case CUBLASLT_EPILOGUE_BIAS:
        *bias = true;
        /* fallthrough */
    case CUBLASLT_EPILOGUE_DEFAULT:
        *act = GEMM_ACT_NONE;
        return true;
    case CUBLASLT_EPILOGUE_RELU_BIAS:
        *bias = true;
        /* fallthrough */
    case CUBLASLT_EPILOGUE_RELU:
        *act = GEMM_ACT_RELU;
        return true;
    case CUBLASLT_EPILOGUE_GELU_BIAS:
        *bias = true;
        /* fallthrough */
    case CUBLASLT_EPILOGUE_GELU:
        *act = GEMM_ACT_GELU;
        return true;
    default:
        return false;
    }
}

static bool compute_is_f64(int32_t compute, bool *f64)
{
    switch (compute) {
    case CUBLAS_COMPUTE_64F:
    case CUBLAS_COMPUTE_64F_PEDANTIC:
        *f64 = true;
        return true;
    case CUBLAS_COMPUTE_32F:
    case CUBLAS_COMPUTE_32F_PEDANTIC:
    case CUBLAS_COMPUTE_32F_FAST_16F:
    case CUBLAS_COMPUTE_32F_FAST_16BF:
    case CUBLAS_COMPUTE_32F_FAST_TF32:
    case CUBLAS_COMPUTE_16F:
    case CUBLAS_COMPUTE_16F_PEDANTIC:
        *f64 = false;
        return true;
    default:
        return false;
    }
}

static double load_scalar(const void *p, int32_t type)
{
    switch (type) {
    case CUDA_R_64F:
        return *(const double *)p;
    case CUDA_R_16F:
        return fp16_half_to_float(*(const uint16_t *)p);
    case CUDA_R_16BF:
        return fp16_bf16_to_float(*(const uint16_t *)p);
    default:
        return *(const float *)p;
    }
}

static bool layout_ok(const lt_layout *l)
{
    return l->order == CUBLASLT_ORDER_COL && gemm_type_supported((cudaDataType_t)l->type) &&
           l->batch_count >= 1 && l->ld >= (int64_t)(l->rows ? l->rows : 1);
}

/* op(A) is m x k and op(B) k x n; D (and C) m x n. */
static bool shapes_agree(const lt_matmul_desc *d, const lt_layout *a, const lt_layout *b,
                         const lt_layout *c, const lt_layout *dl, int64_t *k)
{
    bool ta = d->transa != CUBLAS_OP_N, tb = d->transb != CUBLAS_OP_N;
    uint64_t am = ta ? a->cols : a->rows, ak = ta ? a->rows : a->cols;
    uint64_t bk = tb ? b->cols : b->rows, bn = tb ? b->rows : b->cols;
    *k = (int64_t)ak;
    return am == dl->rows && bn == dl->cols && ak == bk && c->rows == dl->rows &&
           c->cols == dl->cols;
}

static int64_t batch_bytes(const lt_layout *l)
{
    return l->batch_offset * (int64_t)gemm_type_size((cudaDataType_t)l->type);
}

static cublasStatus_t plan(const lt_matmul_desc *d, const void *alpha, const lt_layout *a,
                           const void *A, const lt_layout *b, const void *B, const void *beta,
                           const lt_layout *c, const void *C, const lt_layout *dl, void *D,
                           lt_plan *out)
{
    gemm_act act;
    bool bias, f64;
    int64_t k;
    if (!layout_ok(a) || !layout_ok(b) || !layout_ok(c) || !layout_ok(dl) ||
        !epilogue_act(d->epilogue, &act, &bias) || !compute_is_f64(d->compute_type, &f64) ||
        d->transc != CUBLAS_OP_N || d->pointer_mode > CUBLASLT_POINTER_MODE_DEVICE)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    if (!shapes_agree(d, a, b, c, dl, &k) || !alpha || !beta || (bias && !d->bias))
        return CUBLAS_STATUS_INVALID_VALUE;
    cudaDataType_t bias_type =
        d->bias_data_type < 0 ? (cudaDataType_t)dl->type : (cudaDataType_t)d->bias_data_type;
    *out = (lt_plan){.p = {.m = (int64_t)dl->rows,
                           .n = (int64_t)dl->cols,
                           .k = k,
                           .a = {A, (cudaDataType_t)a->type, a->ld, d->transa != CUBLAS_OP_N},
                           .b = {B, (cudaDataType_t)b->type, b->ld, d->transb != CUBLAS_OP_N},
                           .c = {C, (cudaDataType_t)c->type, c->ld, false},
                           .d = D,
                           .d_type = (cudaDataType_t)dl->type,
                           .ldd = dl->ld,
                           .alpha = load_scalar(alpha, d->scale_type),
                           .beta = load_scalar(beta, d->scale_type),
                           .compute_f64 = f64,
                           .bias = bias ? d->bias : NULL,
                           .bias_type = bias_type,
                           .act = act},
                     .batch = dl->batch_count,
                     .stride_a = batch_bytes(a),
                     .stride_b = batch_bytes(b),
                     .stride_c = batch_bytes(c),
                     .stride_d = batch_bytes(dl),
                     .stride_bias = d->bias_batch_stride * (int64_t)gemm_type_size(bias_type)};
    if (bias && !gemm_type_supported(bias_type))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    return out->p.beta != 0 && !C ? CUBLAS_STATUS_INVALID_VALUE : CUBLAS_STATUS_SUCCESS;
}

/* C (and the bias) may be NULL when unused; NULL stays NULL in every batch member. */
static const void *advance(const void *p, int64_t bytes)
{
    return p ? (const char *)p + bytes : NULL;
}

static cublasStatus_t run(const lt_plan *pl)
{
    for (int64_t i = 0; i < pl->batch; i++) {
        gemm_problem p = pl->p;
        p.a.data = advance(p.a.data, i * pl->stride_a);
        p.b.data = advance(p.b.data, i * pl->stride_b);
        p.c.data = advance(p.c.data, i * pl->stride_c);
        p.d = (char *)p.d + i * pl->stride_d;
        p.bias = advance(p.bias, i * pl->stride_bias);
        if (gemm_compute(&p) != 0)
            return CUBLAS_STATUS_ALLOC_FAILED;
    }
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc,
                              const void *alpha, const void *A, cublasLtMatrixLayout_t Adesc,
                              const void *B, cublasLtMatrixLayout_t Bdesc, const void *beta,
                              const void *C, cublasLtMatrixLayout_t Cdesc, void *D,
                              cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t *algo,
                              void *workspace, size_t workspaceSizeInBytes, cudaStream_t stream)
{
    (void)algo, (void)workspace, (void)workspaceSizeInBytes, (void)stream;
    if (!lightHandle || !valid(computeDesc) || !valid(Adesc) || !valid(Bdesc) || !valid(Cdesc) ||
        !valid(Ddesc))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    lt_plan pl;
    cublasStatus_t st = plan((const lt_matmul_desc *)computeDesc, alpha, (const lt_layout *)Adesc,
                             A, (const lt_layout *)Bdesc, B, beta, (const lt_layout *)Cdesc, C,
                             (const lt_layout *)Ddesc, D, &pl);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    blasdrv_count_gemm();
    return blasdrv_compute() ? run(&pl) : CUBLAS_STATUS_SUCCESS;
}

/* One algorithm fits every supported problem: the CPU kernel, needing no workspace. */
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc, cublasLtMatrixLayout_t Adesc,
    cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
    cublasLtMatmulPreference_t preference, int requestedAlgoCount,
    cublasLtMatmulHeuristicResult_t heuristicResultsArray[], int *returnAlgoCount)
{
    if (!lightHandle || !valid(operationDesc) || !valid(Adesc) || !valid(Bdesc) || !valid(Cdesc) ||
        !valid(Ddesc) || !valid(preference))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (requestedAlgoCount < 1 || !heuristicResultsArray || !returnAlgoCount)
        return CUBLAS_STATUS_INVALID_VALUE;
    lt_plan pl;
    static const float one = 1.0f, zero = 0.0f;
    const lt_matmul_desc *d = (const lt_matmul_desc *)operationDesc;
    lt_matmul_desc probe = *d;
    probe.scale_type = CUDA_R_32F; /* validate the shapes only: read our own scalars */
    probe.bias = d->bias ? d->bias : &zero;
    cublasStatus_t st =
        plan(&probe, &one, (const lt_layout *)Adesc, NULL, (const lt_layout *)Bdesc, NULL, &zero,
             (const lt_layout *)Cdesc, NULL, (const lt_layout *)Ddesc, NULL, &pl);
    *returnAlgoCount = 0;
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    memset(&heuristicResultsArray[0], 0, sizeof heuristicResultsArray[0]);
    heuristicResultsArray[0].algo.data[0] = LT_DESC_MAGIC;
    heuristicResultsArray[0].workspaceSize = 0;
    heuristicResultsArray[0].state = CUBLAS_STATUS_SUCCESS;
    heuristicResultsArray[0].wavesCount = 1.0f;
    *returnAlgoCount = 1;
    return CUBLAS_STATUS_SUCCESS;
}

/* Choosing or tuning an algorithm by its configuration is not simulated: the one algorithm is
 * what the heuristic answers. */
cublasStatus_t cublasLtMatmulAlgoInit(cublasLtHandle_t lightHandle, cublasComputeType_t computeType,
                                      cudaDataType_t scaleType, cudaDataType_t Atype,
                                      cudaDataType_t Btype, cudaDataType_t Ctype,
                                      cudaDataType_t Dtype, int algoId, cublasLtMatmulAlgo_t *algo)
{
    (void)computeType, (void)scaleType, (void)Atype, (void)Btype, (void)Ctype, (void)Dtype,
        (void)algoId, (void)algo;
    return lightHandle ? CUBLAS_STATUS_NOT_SUPPORTED : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t cublasLtMatmulAlgoCheck(cublasLtHandle_t lightHandle,
                                       cublasLtMatmulDesc_t operationDesc,
                                       cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc,
                                       cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
                                       const cublasLtMatmulAlgo_t *algo,
                                       cublasLtMatmulHeuristicResult_t *result)
{
    (void)operationDesc, (void)Adesc, (void)Bdesc, (void)Cdesc, (void)Ddesc, (void)algo,
        (void)result;
    return lightHandle ? CUBLAS_STATUS_NOT_SUPPORTED : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t cublasLtMatmulAlgoConfigGetAttribute(const cublasLtMatmulAlgo_t *algo,
                                                    cublasLtMatmulAlgoConfigAttributes_t attr,
                                                    void *buf, size_t sizeInBytes,
                                                    size_t *sizeWritten)
{
    (void)algo, (void)attr, (void)buf, (void)sizeInBytes, (void)sizeWritten;
    return CUBLAS_STATUS_NOT_SUPPORTED;
}

cublasStatus_t cublasLtMatmulAlgoConfigSetAttribute(cublasLtMatmulAlgo_t *algo,
                                                    cublasLtMatmulAlgoConfigAttributes_t attr,
                                                    const void *buf, size_t sizeInBytes)
{
    (void)algo, (void)attr, (void)buf, (void)sizeInBytes;
    return CUBLAS_STATUS_NOT_SUPPORTED;
}
