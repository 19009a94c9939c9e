/* memory: the runtime's allocation calls, each a thin translation onto the driver function the
 * real runtime uses (cudaMalloc -> cuMemAlloc_v2, cudaMallocAsync -> cuMemAllocAsync, ...). */
#include <cuda_runtime_api.h>

#include "api_ptsz.h"
#include "context.h"
#include "error.h"

cudaError_t cudaMalloc(void **devPtr, size_t size)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    if (!devPtr)
        return rt_error_set(cudaErrorInvalidValue);
    *devPtr = NULL;
    if (size == 0)
        return cudaSuccess;
    CUdeviceptr p = 0;
    CUresult res = RT_CALL(drv, cuMemAlloc_v2, &p, size);
    if (res == CUDA_SUCCESS)
        *devPtr = (void *)p;
    return rt_error_cu(res);
}

cudaError_t cudaFree(void *devPtr)
{
    const rt_driver *drv;
    /* cudaFree(0) is the idiomatic "initialize the runtime now". */
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess || !devPtr)
        return err;
    return rt_error_cu(RT_CALL(drv, cuMemFree_v2, (CUdeviceptr)devPtr));
}

cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    if (!devPtr || !pitch)
        return rt_error_set(cudaErrorInvalidValue);
    CUdeviceptr p = 0;
    CUresult res = RT_CALL(drv, cuMemAllocPitch_v2, &p, pitch, width, height, 4);
    if (res == CUDA_SUCCESS)
        *devPtr = (void *)p;
    return rt_error_cu(res);
}

cudaError_t cudaMalloc3D(struct cudaPitchedPtr *pitchedDevPtr, struct cudaExtent extent)
{
    if (!pitchedDevPtr)
        return rt_error_set(cudaErrorInvalidValue);
    void *p = NULL;
    size_t pitch = 0;
    cudaError_t err = cudaMallocPitch(&p, &pitch, extent.width, extent.height * extent.depth);
    if (err != cudaSuccess)
        return err;
    *pitchedDevPtr = (struct cudaPitchedPtr){
        .ptr = p, .pitch = pitch, .xsize = extent.width, .ysize = extent.height};
    return cudaSuccess;
}

cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    if (!devPtr || (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost))
        return rt_error_set(cudaErrorInvalidValue);
    CUdeviceptr p = 0;
    CUresult res = RT_CALL(drv, cuMemAllocManaged, &p, size, flags);
    if (res == CUDA_SUCCESS)
        *devPtr = (void *)p;
    return rt_error_cu(res);
}

cudaError_t cudaMemGetInfo(size_t *free, size_t *total)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    return rt_error_cu(RT_CALL(drv, cuMemGetInfo_v2, free, total));
}

static cudaError_t malloc_async(__typeof__(&cuMemAllocAsync) alloc, void **devPtr, size_t size,
                                cudaStream_t stream)
{
    if (!devPtr)
        return rt_error_set(cudaErrorInvalidValue);
    if (!alloc)
        return rt_error_set(cudaErrorNotSupported);
    CUdeviceptr p = 0;
    CUresult res = alloc(&p, size, (CUstream)stream);
    if (res == CUDA_SUCCESS)
        *devPtr = (void *)p;
    return rt_error_cu(res);
}

cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    return err ? err : malloc_async(drv->cuMemAllocAsync, devPtr, size, hStream);
}

cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    return err ? err : malloc_async(drv->cuMemAllocAsync_ptsz, devPtr, size, hStream);
}

cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    return rt_error_cu(RT_CALL(drv, cuMemFreeAsync, (CUdeviceptr)devPtr, (CUstream)hStream));
}

cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    return rt_error_cu(RT_CALL(drv, cuMemFreeAsync_ptsz, (CUdeviceptr)devPtr, (CUstream)hStream));
}

static cudaError_t malloc_from_pool(__typeof__(&cuMemAllocFromPoolAsync) alloc, void **ptr,
                                    size_t size, cudaMemPool_t pool, cudaStream_t stream)
{
    if (!ptr || !pool)
        return rt_error_set(cudaErrorInvalidValue);
    if (!alloc)
        return rt_error_set(cudaErrorNotSupported);
    CUdeviceptr p = 0;
    CUresult res = alloc(&p, size, (CUmemoryPool)pool, (CUstream)stream);
    if (res == CUDA_SUCCESS)
        *ptr = (void *)p;
    return rt_error_cu(res);
}

cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t memPool,
                                    cudaStream_t stream)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    return err ? err : malloc_from_pool(drv->cuMemAllocFromPoolAsync, ptr, size, memPool, stream);
}

cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t memPool,
                                         cudaStream_t stream)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    return err ? err
               : malloc_from_pool(drv->cuMemAllocFromPoolAsync_ptsz, ptr, size, memPool, stream);
}
