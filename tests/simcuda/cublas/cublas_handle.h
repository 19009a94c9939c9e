/* cublas_handle: the state behind a cublasHandle_t.
 *
 * cublasCreate_v2 allocates a default workspace of CUBLAS_HANDLE_DEFAULT_WORKSPACE bytes (a fixed
 * 4 MiB; the real library's default depends on the architecture) through the driver's
 * cuMemAlloc_v2, as the real library's static cudart does; cublasSetWorkspace_v2 replaces it by the
 * caller's buffer (the default one is freed then), and cublasDestroy_v2 frees whichever the library
 * owns. The CPU GEMMs do not need scratch device memory: the workspace exists so that memory tools
 * see the allocation a real cuBLAS makes. */
#ifndef SIMCUDA_CUBLAS_HANDLE_H
#define SIMCUDA_CUBLAS_HANDLE_H

#include <stdbool.h>

#include <cuda.h>
#include <cublas_api.h>

#define CUBLAS_HANDLE_DEFAULT_WORKSPACE ((size_t)4 << 20)

struct cublasContext {
    cudaStream_t stream;
    void *workspace;
    size_t workspace_size;
    CUdeviceptr owned_workspace; /* 0 once the caller's workspace replaced the default */
    cublasPointerMode_t pointer_mode;
    cublasMath_t math_mode;
};

#endif
