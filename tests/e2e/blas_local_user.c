/* A library linked to libcublas, loaded RTLD_LOCAL by blas-local (a Python extension's case):
 * its cuBLAS calls bind to the preloaded shim, whose RTLD_NEXT does not see libcublas. */
#include <cublas_api.h>

int blas_local_gemm(float *a, float *b, float *c)
{
    cublasHandle_t h;
    const float one = 1.0f, zero = 0.0f;
    if (cublasCreate_v2(&h) != CUBLAS_STATUS_SUCCESS)
        return 1;
    int rc = cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 3, 4, &one, a, 2, b, 4, &zero, c, 2);
    cublasDestroy_v2(h);
    return rc;
}
