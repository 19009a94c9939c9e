/* pool: stream-ordered memory pools; cudaMemPool_t is the driver's CUmemoryPool and cudaMemPoolAttr
 * shares its numbering with CUmemPool_attribute. */
#include <cuda_runtime_api.h>

#include "context.h"
#include "error.h"

static cudaError_t device_handle(const rt_driver *drv, int device, CUdevice *dev)
{
    return drv->cuDeviceGet(dev, device) == CUDA_SUCCESS ? cudaSuccess
                                                         : rt_error_set(cudaErrorInvalidDevice);
}

cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *memPool, int device)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    CUdevice dev;
    if (device_handle(drv, device, &dev) != cudaSuccess)
        return cudaErrorInvalidDevice;
    return rt_error_cu(RT_CALL(drv, cuDeviceGetDefaultMemPool, (CUmemoryPool *)memPool, dev));
}

cudaError_t cudaMemPoolCreate(cudaMemPool_t *memPool, const struct cudaMemPoolProps *poolProps)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    if (!memPool || !poolProps)
        return rt_error_set(cudaErrorInvalidValue);
    CUmemPoolProps props = {
        .allocType = (CUmemAllocationType)poolProps->allocType,
        .handleTypes = (CUmemAllocationHandleType)poolProps->handleTypes,
        .location = {.type = (CUmemLocationType)poolProps->location.type,
                     .id = poolProps->location.id},
        .win32SecurityAttributes = poolProps->win32SecurityAttributes,
        .maxSize = poolProps->maxSize,
        .usage = poolProps->usage,
    };
    return rt_error_cu(RT_CALL(drv, cuMemPoolCreate, (CUmemoryPool *)memPool, &props));
}

cudaError_t cudaMemPoolDestroy(cudaMemPool_t memPool)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    return rt_error_cu(RT_CALL(drv, cuMemPoolDestroy, (CUmemoryPool)memPool));
}

cudaError_t cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    return rt_error_cu(RT_CALL(drv, cuMemPoolTrimTo, (CUmemoryPool)memPool, minBytesToKeep));
}

cudaError_t cudaDeviceGetMemPool(cudaMemPool_t *memPool, int device)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    CUdevice dev;
    if (device_handle(drv, device, &dev) != cudaSuccess)
        return cudaErrorInvalidDevice;
    return rt_error_cu(RT_CALL(drv, cuDeviceGetMemPool, (CUmemoryPool *)memPool, dev));
}

cudaError_t cudaDeviceSetMemPool(int device, cudaMemPool_t memPool)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    CUdevice dev;
    if (device_handle(drv, device, &dev) != cudaSuccess)
        return cudaErrorInvalidDevice;
    return rt_error_cu(RT_CALL(drv, cuDeviceSetMemPool, dev, (CUmemoryPool)memPool));
}

cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void *value)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    return rt_error_cu(RT_CALL(drv, cuMemPoolSetAttribute, (CUmemoryPool)memPool,
                               (CUmemPool_attribute)attr, value));
}

cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void *value)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    return rt_error_cu(RT_CALL(drv, cuMemPoolGetAttribute, (CUmemoryPool)memPool,
                               (CUmemPool_attribute)attr, value));
}

/* One device: its own pools are always accessible to it read-write, and no other access can be
 * given. */
cudaError_t cudaMemPoolSetAccess(cudaMemPool_t memPool, const struct cudaMemAccessDesc *descList,
                                 size_t count)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    if (!memPool || (count && !descList))
        return rt_error_set(cudaErrorInvalidValue);
    for (size_t i = 0; i < count; i++) {
        const struct cudaMemAccessDesc *d = &descList[i];
        if (d->location.type != cudaMemLocationTypeDevice || d->location.id != 0)
            return rt_error_set(cudaErrorInvalidDevice);
        if (d->flags != cudaMemAccessFlagsProtReadWrite)
            return rt_error_set(cudaErrorInvalidValue);
    }
    return cudaSuccess;
}
