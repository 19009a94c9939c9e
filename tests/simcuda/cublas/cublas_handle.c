#include "cublas_handle.h"

#include <stdlib.h>

#include "blas_driver.h"
#include "blas_status.h"
#include "blas_unsupported.h"

_Static_assert(BLAS_UNSUPPORTED_STATUS == CUBLAS_STATUS_NOT_SUPPORTED,
               "blas_unsupported.h: the status of an unsimulated call");

cublasStatus_t cublasCreate_v2(cublasHandle_t *handle)
{
    if (!handle)
        return CUBLAS_STATUS_INVALID_VALUE;
    *handle = NULL;
    if (blasdrv_enter() != CUDA_SUCCESS)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    struct cublasContext *h = calloc(1, sizeof *h);
    if (!h)
        return CUBLAS_STATUS_ALLOC_FAILED;
    if (blasdrv_mem_alloc(&h->owned_workspace, CUBLAS_HANDLE_DEFAULT_WORKSPACE) != CUDA_SUCCESS) {
        free(h);
        return CUBLAS_STATUS_ALLOC_FAILED;
    }
    h->workspace = (void *)h->owned_workspace;
    h->workspace_size = CUBLAS_HANDLE_DEFAULT_WORKSPACE;
    h->pointer_mode = CUBLAS_POINTER_MODE_HOST;
    h->math_mode = CUBLAS_DEFAULT_MATH;
    *handle = h;
    return CUBLAS_STATUS_SUCCESS;
}

static void release_owned_workspace(struct cublasContext *h)
{
    if (h->owned_workspace)
        blasdrv_mem_free(h->owned_workspace);
    h->owned_workspace = 0;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle)
{
    if (!handle)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    release_owned_workspace(handle);
    free(handle);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void *workspace,
                                     size_t workspaceSizeInBytes)
{
    if (!handle)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!workspace && workspaceSizeInBytes)
        return CUBLAS_STATUS_INVALID_VALUE;
    release_owned_workspace(handle);
    handle->workspace = workspace;
    handle->workspace_size = workspaceSizeInBytes;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t streamId)
{
    if (!handle)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    handle->stream = streamId;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t *streamId)
{
    if (!handle)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!streamId)
        return CUBLAS_STATUS_INVALID_VALUE;
    *streamId = handle->stream;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t mode)
{
    if (!handle)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (mode != CUBLAS_POINTER_MODE_HOST && mode != CUBLAS_POINTER_MODE_DEVICE)
        return CUBLAS_STATUS_INVALID_VALUE;
    handle->pointer_mode = mode;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t *mode)
{
    if (!handle)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!mode)
        return CUBLAS_STATUS_INVALID_VALUE;
    *mode = handle->pointer_mode;
    return CUBLAS_STATUS_SUCCESS;
}

/* Math modes only permit faster paths on a GPU; the CPU GEMMs are exact fp32/fp64 regardless. */
cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode)
{
    if (!handle)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    handle->math_mode = mode;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t *mode)
{
    if (!handle)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!mode)
        return CUBLAS_STATUS_INVALID_VALUE;
    *mode = handle->math_mode;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetVersion_v2(cublasHandle_t handle, int *version)
{
    (void)handle;
    if (!version)
        return CUBLAS_STATUS_INVALID_VALUE;
    *version = CUBLAS_VERSION;
    return CUBLAS_STATUS_SUCCESS;
}

const char *cublasGetStatusName(cublasStatus_t status)
{
    return blas_status_name(status);
}

const char *cublasGetStatusString(cublasStatus_t status)
{
    return blas_status_string(status);
}

cublasStatus_t cublasGetProperty(libraryPropertyType type, int *value)
{
    return blas_get_property(type, value);
}

/* Launches do not run on multiprocessors here: any target is accepted and changes nothing. */
cublasStatus_t cublasSetSmCountTarget(cublasHandle_t handle, int smCountTarget)
{
    if (!handle)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    return smCountTarget < 0 ? CUBLAS_STATUS_INVALID_VALUE : CUBLAS_STATUS_SUCCESS;
}
