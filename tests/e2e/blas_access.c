/* blas-access: every cuBLAS and cuBLASLt GEMM entry point the shim hooks, called once or twice
 * on simcuda with small known shapes (transposes, lda > rows, strides, broadcast, pointer
 * arrays in device and in untracked memory, beta 0 and not, device pointer mode, _64, an Lt
 * bias epilogue with workspace). It prints each device buffer as `buf NAME 0xADDR`; the
 * expected OP and ACCESS records are written out in blas_access_check.py from those. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>
#include <cublas_api.h>
#include <cuda_runtime_api.h>

#define CK(call)                                                                                   \
    do {                                                                                           \
        int rc_ = (int)(call);                                                                     \
        if (rc_ != 0) {                                                                            \
            fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, rc_);             \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* cublasHgemm is declared for C++ only; its ABI takes pointers to 16-bit storage. */
cublasStatus_t cublasHgemm(cublasHandle_t handle, cublasOperation_t transa,
                           cublasOperation_t transb, int m, int n, int k, const uint16_t *alpha,
                           const uint16_t *A, int lda, const uint16_t *B, int ldb,
                           const uint16_t *beta, uint16_t *C, int ldc);

static void *dev(const char *name, size_t bytes)
{
    void *p = NULL;
    CK(cudaMalloc(&p, bytes));
    CK(cudaMemset(p, 0, bytes));
    printf("buf %s %p\n", name, p);
    return p;
}

int main(void)
{
    cublasHandle_t h;
    CK(cublasCreate_v2(&h));
    char *a = dev("A", 4096), *b = dev("B", 4096), *c = dev("C", 4096);
    char *ws = dev("W", 8192);
    CK(cublasSetWorkspace_v2(h, ws, 8192));
    const float one = 1.0f, zero = 0.0f;
    const double done = 1.0, dhalf = 0.5;
    const uint16_t hone = 0x3c00, hzero = 0x8000; /* -0: still zero */
    float *f = (float *)a, *g = (float *)b, *o = (float *)c;

    /* 1-3: typed single-precision, transposes, lda > rows, beta 0 and 1 */
    CK(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 3, 2, 4, &one, f, 5, g, 4, &zero, o, 3));
    CK(cublasSgemm_v2(h, CUBLAS_OP_T, CUBLAS_OP_N, 3, 2, 4, &one, f, 6, g, 4, &one, o, 4));
    CK(cublasSgemm_v2_64(h, CUBLAS_OP_N, CUBLAS_OP_T, 2, 3, 2, &one, f, 2, g, 3, &zero, o, 2));
    /* 4-6: double, half, half _64 */
    CK(cublasDgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &done, (double *)a, 2, (double *)b, 2,
                      &dhalf, (double *)c, 2));
    CK(cublasHgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 2, 2, &hone, (uint16_t *)a, 4, (uint16_t *)b, 2,
                   &hzero, (uint16_t *)c, 4));
    CK(cublasDgemm_v2_64(h, CUBLAS_OP_T, CUBLAS_OP_T, 2, 3, 4, &done, (double *)a, 4, (double *)b,
                         3, &dhalf, (double *)c, 2));
    /* 7-8: GemmEx with half inputs and float output; _64 with float and beta 1 */
    CK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 3, &one, a, CUDA_R_16F, 2, b, CUDA_R_16F, 3,
                    &zero, c, CUDA_R_32F, 2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    CK(cublasGemmEx_64(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 3, &one, a, CUDA_R_32F, 2, b, CUDA_R_32F,
                       3, &one, c, CUDA_R_32F, 2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    /* 9-12: strided batches: stride > matrix, broadcast B (stride 0), lda > rows, Ex and _64 */
    CK(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, f, 2, 8, g, 2, 0,
                                 &zero, o, 2, 4, 3));
    CK(cublasSgemmStridedBatched_64(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, f, 3, 6, g, 2, 4,
                                    &one, o, 2, 4, 3));
    CK(cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 2, 2, 3, &one, a, CUDA_R_32F, 3, 6,
                                  b, CUDA_R_32F, 3, 6, &zero, c, CUDA_R_32F, 2, 4, 2,
                                  CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    CK(cublasGemmStridedBatchedEx_64(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, a, CUDA_R_32F, 2,
                                     4, b, CUDA_R_32F, 2, 4, &one, c, CUDA_R_32F, 2, 4, 2,
                                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));

    /* 13: pointer arrays in a tracked device allocation: A members apart, B one matrix thrice,
     * C members adjacent */
    char *p = dev("P", 3 * 3 * sizeof(void *));
    const void *host_arr[9] = {a, a + 64, a + 128, b, b, b, c, c + 16, c + 32};
    CK(cudaMemcpy(p, host_arr, sizeof host_arr, cudaMemcpyHostToDevice));
    void **pa = (void **)p;
    CK(cublasGemmBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, (const void *const *)pa,
                           CUDA_R_32F, 2, (const void *const *)(pa + 3), CUDA_R_32F, 2, &zero,
                           pa + 6, CUDA_R_32F, 2, 3, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    /* 14: the same arrays in memory the shim does not track: only the arrays are recorded */
    void **hp = malloc(sizeof host_arr);
    memcpy(hp, host_arr, sizeof host_arr);
    printf("buf H %p\n", (void *)hp);
    CK(cublasGemmBatchedEx_64(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, (const void *const *)hp,
                              CUDA_R_32F, 2, (const void *const *)(hp + 3), CUDA_R_32F, 2, &one,
                              hp + 6, CUDA_R_32F, 2, 3, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));

    /* 14b: 200 members, A's apart (gaps): more ranges than a call records, so A's members are
     * joined into their hull inside the one allocation; C's are adjacent and join exactly */
    char *qa = dev("QA", 8192), *qc = dev("QC", 4096);
    char *q = dev("Q", 3 * 200 * sizeof(void *));
    const void *qarr[600];
    for (int i = 0; i < 200; i++) {
        qarr[i] = qa + 32 * i;
        qarr[200 + i] = b;
        qarr[400 + i] = qc + 16 * i;
    }
    CK(cudaMemcpy(q, qarr, sizeof qarr, cudaMemcpyHostToDevice));
    void **qp = (void **)q;
    CK(cublasGemmBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, (const void *const *)qp,
                           CUDA_R_32F, 2, (const void *const *)(qp + 200), CUDA_R_32F, 2, &zero,
                           qp + 400, CUDA_R_32F, 2, 200, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));

    /* 15: device pointer mode: beta is not read, so C counts as read; alpha and beta recorded */
    float *scal = dev("S", 256);
    const float scal_host[2] = {1.0f, 0.0f};
    CK(cudaMemcpy(scal, scal_host, sizeof scal_host, cudaMemcpyHostToDevice));
    CK(cublasSetPointerMode_v2(h, CUBLAS_POINTER_MODE_DEVICE));
    CK(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, scal, f, 2, g, 2, scal + 1, o, 2));
    CK(cublasSetPointerMode_v2(h, CUBLAS_POINTER_MODE_HOST));

    /* 16-18: cuBLASLt. A bias epilogue and a workspace; then A transposed and batched through
     * layout attributes with beta 1 and C apart from D; then a descriptor made by Init. */
    cublasLtHandle_t lt;
    CK(cublasLtCreate(&lt));
    char *bias = dev("bias", 256), *d = dev("D", 4096), *lws = dev("LW", 1024);
    cublasLtMatmulDesc_t md;
    cublasLtMatrixLayout_t la, lb, lc, ld;
    CK(cublasLtMatmulDescCreate(&md, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
    CK(cublasLtMatmulDescSetAttribute(md, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    const void *bias_ptr = bias;
    CK(cublasLtMatmulDescSetAttribute(md, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_ptr,
                                      sizeof bias_ptr));
    CK(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, 4, 3, 4));
    CK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, 3, 2, 3));
    CK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, 4, 2, 4));
    CK(cublasLtMatrixLayoutCreate(&ld, CUDA_R_32F, 4, 2, 5));
    CK(cublasLtMatmul(lt, md, &one, a, la, b, lb, &zero, c, lc, d, ld, NULL, lws, 1024, NULL));

    cublasOperation_t tr = CUBLAS_OP_T;
    epi = CUBLASLT_EPILOGUE_DEFAULT;
    CK(cublasLtMatmulDescSetAttribute(md, CUBLASLT_MATMUL_DESC_TRANSA, &tr, sizeof tr));
    CK(cublasLtMatmulDescSetAttribute(md, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    CK(cublasLtMatrixLayoutDestroy(la));
    CK(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, 3, 4, 5)); /* stored k x m, ld 5 */
    int32_t batch = 2;
    int64_t sa = 32, sb = 8, sc = 8, sd = 16;
    CK(cublasLtMatrixLayoutSetAttribute(la, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
                                        sizeof batch));
    CK(cublasLtMatrixLayoutSetAttribute(la, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sa,
                                        sizeof sa));
    CK(cublasLtMatrixLayoutSetAttribute(lb, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
                                        sizeof batch));
    CK(cublasLtMatrixLayoutSetAttribute(lb, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sb,
                                        sizeof sb));
    CK(cublasLtMatrixLayoutSetAttribute(lc, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
                                        sizeof batch));
    CK(cublasLtMatrixLayoutSetAttribute(lc, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sc,
                                        sizeof sc));
    CK(cublasLtMatrixLayoutSetAttribute(ld, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
                                        sizeof batch));
    CK(cublasLtMatrixLayoutSetAttribute(ld, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sd,
                                        sizeof sd));
    CK(cublasLtMatmul(lt, md, &one, a, la, b, lb, &one, c, lc, d, ld, NULL, NULL, 0, NULL));

    cublasLtMatmulDescOpaque_t body;
    cublasLtMatmulDesc_t md2 = &body;
    CK(cublasLtMatmulDescInit(md2, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasLtMatrixLayoutOpaque_t lbody;
    cublasLtMatrixLayout_t la2 = &lbody;
    CK(cublasLtMatrixLayoutInit(la2, CUDA_R_32F, 4, 3, 4));
    CK(cublasLtMatrixLayoutSetAttribute(lb, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &(int32_t){1},
                                        sizeof(int32_t)));
    CK(cublasLtMatrixLayoutSetAttribute(lc, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &(int32_t){1},
                                        sizeof(int32_t)));
    CK(cublasLtMatrixLayoutSetAttribute(ld, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &(int32_t){1},
                                        sizeof(int32_t)));
    CK(cublasLtMatmul(lt, md2, &one, a, la2, b, lb, &zero, NULL, lc, d, ld, NULL, lws, 512, NULL));

    /* 19: device pointer mode set on the Init'ed descriptor: C read, alpha and beta recorded */
    int32_t pm = CUBLASLT_POINTER_MODE_DEVICE;
    CK(cublasLtMatmulDescSetAttribute(md2, CUBLASLT_MATMUL_DESC_POINTER_MODE, &pm, sizeof pm));
    CK(cublasLtMatmul(lt, md2, scal, a, la2, b, lb, scal + 1, c, lc, d, ld, NULL, NULL, 0, NULL));

    CK(cublasLtMatrixLayoutDestroy(la));
    CK(cublasLtMatrixLayoutDestroy(lb));
    CK(cublasLtMatrixLayoutDestroy(lc));
    CK(cublasLtMatrixLayoutDestroy(ld));
    CK(cublasLtMatmulDescDestroy(md));
    CK(cublasLtDestroy(lt));
    CK(cublasDestroy_v2(h));
    free(hp);
    printf("done\n");
    return 0;
}
