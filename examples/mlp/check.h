/* Checking every CUDA runtime and cuBLAS return code: on failure the trainer prints the error's
 * name and the failing call on stderr and exits, with a distinct status for out-of-memory so
 * that ceiling tests can tell it from other failures.
 */
#ifndef MLP_CHECK_H
#define MLP_CHECK_H

#include <cublas_api.h>
#include <cuda_runtime_api.h>

enum check_exit {
    CHECK_EXIT_ERROR = 1, /* any CUDA or cuBLAS failure but out-of-memory */
    CHECK_EXIT_USAGE = 2, /* bad command line */
    CHECK_EXIT_OOM = 3,   /* cudaErrorMemoryAllocation or CUBLAS_STATUS_ALLOC_FAILED */
};

#define CHECK_CUDA(call)   check_cuda((call), #call, __FILE__, __LINE__)
#define CHECK_CUBLAS(call) check_cublas((call), #call, __FILE__, __LINE__)

void check_cuda(cudaError_t err, const char *call, const char *file, int line);
void check_cublas(cublasStatus_t status, const char *call, const char *file, int line);

#endif /* MLP_CHECK_H */
