/* host_memory: page-locked host memory, allocated or registered through the driver. */
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "context.h"
#include "error.h"

/* Alignment of host allocations made without the driver: a page, as pinned memory. */
#define RT_HOST_ALIGNMENT 4096

cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    if (!pHost)
        return rt_error_set(cudaErrorInvalidValue);
    /* cudaHostAlloc* flags have the values of CU_MEMHOSTALLOC_*. */
    if (drv->cuMemHostAlloc)
        return rt_error_cu(drv->cuMemHostAlloc(pHost, size, flags));
    /* A driver without page-locked allocations: simulated host memory is all "pinned". */
    return posix_memalign(pHost, RT_HOST_ALIGNMENT, size ? size : 1) == 0
               ? cudaSuccess
               : rt_error_set(cudaErrorMemoryAllocation);
}

cudaError_t cudaMallocHost(void **ptr, size_t size)
{
    return cudaHostAlloc(ptr, size, cudaHostAllocDefault);
}

cudaError_t cudaFreeHost(void *ptr)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess || !ptr)
        return err;
    if (!drv->cuMemHostAlloc) {
        free(ptr);
        return cudaSuccess;
    }
    return rt_error_cu(RT_CALL(drv, cuMemFreeHost, ptr));
}

cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    /* cudaHostRegister* flags have the values of CU_MEMHOSTREGISTER_*. */
    return rt_error_cu(RT_CALL(drv, cuMemHostRegister_v2, ptr, size, flags));
}

cudaError_t cudaHostUnregister(void *ptr)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    return rt_error_cu(RT_CALL(drv, cuMemHostUnregister, ptr));
}

cudaError_t cudaHostGetDevicePointer(void **pDevice, void *pHost, unsigned int flags)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    if (!pDevice)
        return rt_error_set(cudaErrorInvalidValue);
    CUdeviceptr p = 0;
    CUresult res = RT_CALL(drv, cuMemHostGetDevicePointer_v2, &p, pHost, flags);
    if (res == CUDA_SUCCESS)
        *pDevice = (void *)p;
    return rt_error_cu(res);
}

cudaError_t cudaHostGetFlags(unsigned int *pFlags, void *pHost)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    return rt_error_cu(RT_CALL(drv, cuMemHostGetFlags, pFlags, pHost));
}
