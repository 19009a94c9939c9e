/* function: kernel attributes and occupancy, answered as for an H100 kernel that uses few
 * registers and no static shared memory (the simulated kernels have no device image to read
 * them from). */
#include <cuda_runtime_api.h>

#include "context.h"
#include "error.h"
#include "launch.h"

#define MAX_THREADS        1024
#define MAX_DYNAMIC_SHARED 232448
#define THREADS_PER_SM     2048
#define MAX_BLOCKS_PER_SM  32

cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *attr, const void *func)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    if (!attr)
        return rt_error_set(cudaErrorInvalidValue);
    if (!rt_kernel_function(drv, func))
        return rt_error_set(cudaErrorInvalidDeviceFunction);
    *attr = (struct cudaFuncAttributes){
        .maxThreadsPerBlock = MAX_THREADS,
        .numRegs = 32,
        .ptxVersion = 90,
        .binaryVersion = 90,
        .maxDynamicSharedSizeBytes = 48 * 1024,
        .preferredShmemCarveout = -1,
    };
    return cudaSuccess;
}

/* The driver function behind a host function: the no-op CUfunction simcuda made for it. */
cudaError_t cudaGetFuncBySymbol(cudaFunction_t *functionPtr, const void *symbolPtr)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    if (!functionPtr)
        return rt_error_set(cudaErrorInvalidValue);
    CUfunction f = rt_kernel_function(drv, symbolPtr);
    if (!f)
        return rt_error_set(cudaErrorInvalidDeviceFunction);
    *functionPtr = (cudaFunction_t)f;
    return cudaSuccess;
}

static cudaError_t set_attribute(enum cudaFuncAttribute attr, int value)
{
    if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize &&
        (value < 0 || value > MAX_DYNAMIC_SHARED))
        return rt_error_set(cudaErrorInvalidValue);
    return cudaSuccess;
}

cudaError_t cudaFuncSetAttribute(const void *func, enum cudaFuncAttribute attr, int value)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    return rt_kernel_function(drv, func) ? set_attribute(attr, value)
                                         : rt_error_set(cudaErrorInvalidDeviceFunction);
}

cudaError_t cudaKernelSetAttributeForDevice(cudaKernel_t kernel, enum cudaFuncAttribute attr,
                                            int value, int device)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    if (device != 0)
        return rt_error_set(cudaErrorInvalidDevice);
    return rt_kernel_function(drv, kernel) ? set_attribute(attr, value)
                                           : rt_error_set(cudaErrorInvalidDeviceFunction);
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks, const void *func,
                                                                   int blockSize,
                                                                   size_t dynamicSMemSize,
                                                                   unsigned int flags)
{
    (void)flags;
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    if (!numBlocks || blockSize <= 0 || blockSize > MAX_THREADS ||
        dynamicSMemSize > MAX_DYNAMIC_SHARED)
        return rt_error_set(cudaErrorInvalidValue);
    if (!rt_kernel_function(drv, func))
        return rt_error_set(cudaErrorInvalidDeviceFunction);
    int blocks = THREADS_PER_SM / blockSize;
    *numBlocks = blocks > MAX_BLOCKS_PER_SM ? MAX_BLOCKS_PER_SM : blocks;
    return cudaSuccess;
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, const void *func,
                                                          int blockSize, size_t dynamicSMemSize)
{
    return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(numBlocks, func, blockSize,
                                                                  dynamicSMemSize, 0);
}
