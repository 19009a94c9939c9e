/* Error checks for the trainer: report and exit. */
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

void check_cuda(cudaError_t err, const char *call, const char *file, int line)
{
    if (err == cudaSuccess)
        return;
    fprintf(stderr, "mlp-train: %s:%d: %s failed: %s (%d)\n", file, line, call,
            cudaGetErrorName(err), (int)err);
    exit(err == cudaErrorMemoryAllocation ? CHECK_EXIT_OOM : CHECK_EXIT_ERROR);
}

/* Our own table: cublasGetStatusName is not part of every cuBLAS we run on. */
static const char *cublas_status_name(cublasStatus_t status)
{
    switch (status) {
    case CUBLAS_STATUS_SUCCESS:
        return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
        return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
        return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
        return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
        return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
        return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
        return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
        return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
        return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR:
        return "CUBLAS_STATUS_LICENSE_ERROR";
    }
    return "CUBLAS_STATUS_UNKNOWN";
}

void check_cublas(cublasStatus_t status, const char *call, const char *file, int line)
{
    if (status == CUBLAS_STATUS_SUCCESS)
        return;
    fprintf(stderr, "mlp-train: %s:%d: %s failed: %s (%d)\n", file, line, call,
            cublas_status_name(status), (int)status);
    exit(status == CUBLAS_STATUS_ALLOC_FAILED ? CHECK_EXIT_OOM : CHECK_EXIT_ERROR);
}
