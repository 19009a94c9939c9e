/* launch: the runtime's kernel table and launches.
 *
 * simcudaRegisterKernel asks the driver (simcuRegisterKernel) for a CUfunction and remembers it
 * under the host function's address, the handle a real program passes to cudaLaunchKernel.
 * Every launch entry point then becomes cuLaunchKernel on that CUfunction, so the driver (and a
 * shim above it) sees each launch with its parameters. The simulated cudaKernel_t of CUDA 13's
 * __cudaGetKernel/__cudaLaunchKernel is that same CUfunction. cudaLaunchKernelExC becomes
 * cuLaunchKernelEx with the same attributes (cudaLaunchAttribute and CUlaunchAttribute share
 * their layout), as in the real runtime. */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include <cuda.h>

#include <cuda_runtime_api.h>

#include "api_ptsz.h"
#include "context.h"
#include "error.h"
#include "simcuda.h"

typedef struct kernel_entry {
    const void *fn;
    CUfunction func;
} kernel_entry;

static pthread_rwlock_t kernels_lock = PTHREAD_RWLOCK_INITIALIZER;
static kernel_entry *kernels;
static size_t kernel_count, kernel_capacity;

static CUfunction find_kernel(const void *fn)
{
    CUfunction func = NULL;
    pthread_rwlock_rdlock(&kernels_lock);
    for (size_t i = 0; i < kernel_count && !func; i++)
        if (kernels[i].fn == fn)
            func = kernels[i].func;
    pthread_rwlock_unlock(&kernels_lock);
    return func;
}

/* The function queries take a host function or, as in the real runtime, a cudaKernel_t (here
 * the CUfunction itself). */
static CUfunction find_kernel_or_handle(const void *fn)
{
    CUfunction func = find_kernel(fn);
    pthread_rwlock_rdlock(&kernels_lock);
    for (size_t i = 0; i < kernel_count && !func; i++)
        if ((const void *)kernels[i].func == fn)
            func = kernels[i].func;
    pthread_rwlock_unlock(&kernels_lock);
    return func;
}

static bool add_kernel(const void *fn, CUfunction func)
{
    bool ok = true;
    pthread_rwlock_wrlock(&kernels_lock);
    if (kernel_count == kernel_capacity) {
        size_t cap = kernel_capacity ? 2 * kernel_capacity : 32;
        kernel_entry *grown = realloc(kernels, cap * sizeof *grown);
        if (grown) {
            kernels = grown;
            kernel_capacity = cap;
        }
    }
    if (kernel_count < kernel_capacity)
        kernels[kernel_count++] = (kernel_entry){fn, func};
    else
        ok = false;
    pthread_rwlock_unlock(&kernels_lock);
    return ok;
}

int simcudaRegisterKernel(simcuda_kernel_fn fn, const char *name, int nparams,
                          const size_t *param_sizes)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    if (!fn || nparams < 0)
        return rt_error_set(cudaErrorInvalidValue);
    if (find_kernel((const void *)fn))
        return cudaSuccess;
    CUfunction func = NULL;
    CUresult res = RT_CALL(drv, simcuRegisterKernel, fn, name, nparams, param_sizes, &func);
    if (res != CUDA_SUCCESS)
        return rt_error_cu(res);
    return add_kernel((const void *)fn, func) ? cudaSuccess
                                              : rt_error_set(cudaErrorMemoryAllocation);
}

static cudaError_t launch(bool per_thread, CUfunction func, dim3 grid, dim3 block, void **args,
                          size_t shmem, cudaStream_t stream)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    if (!func)
        return rt_error_set(cudaErrorInvalidDeviceFunction);
    __typeof__(&cuLaunchKernel) fn = per_thread ? drv->cuLaunchKernel_ptsz : drv->cuLaunchKernel;
    if (!fn)
        return rt_error_set(cudaErrorNotSupported);
    return rt_error_cu(fn(func, grid.x, grid.y, grid.z, block.x, block.y, block.z, (unsigned)shmem,
                          (CUstream)stream, args, NULL));
}

cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                             size_t sharedMem, cudaStream_t stream)
{
    return launch(false, find_kernel(func), gridDim, blockDim, args, sharedMem, stream);
}

cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                  size_t sharedMem, cudaStream_t stream)
{
    return launch(true, find_kernel(func), gridDim, blockDim, args, sharedMem, stream);
}

static cudaError_t launch_ex(bool per_thread, const cudaLaunchConfig_t *config, const void *func,
                             void **args)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    if (!config)
        return rt_error_set(cudaErrorInvalidValue);
    CUfunction f = find_kernel(func);
    if (!f)
        return rt_error_set(cudaErrorInvalidDeviceFunction);
    __typeof__(&cuLaunchKernelEx) fn =
        per_thread ? drv->cuLaunchKernelEx_ptsz : drv->cuLaunchKernelEx;
    if (!fn)
        return rt_error_set(cudaErrorNotSupported);
    CUlaunchConfig cfg = {
        .gridDimX = config->gridDim.x,
        .gridDimY = config->gridDim.y,
        .gridDimZ = config->gridDim.z,
        .blockDimX = config->blockDim.x,
        .blockDimY = config->blockDim.y,
        .blockDimZ = config->blockDim.z,
        .sharedMemBytes = (unsigned)config->dynamicSmemBytes,
        .hStream = (CUstream)config->stream,
        .attrs = (CUlaunchAttribute *)config->attrs,
        .numAttrs = config->numAttrs,
    };
    return rt_error_cu(fn(&cfg, f, args, NULL));
}

cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *func, void **args)
{
    return launch_ex(false, config, func, args);
}

cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *config, const void *func,
                                     void **args)
{
    return launch_ex(true, config, func, args);
}

cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *func)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    CUfunction f = find_kernel(func);
    if (!kernel || !f)
        return rt_error_set(kernel ? cudaErrorInvalidDeviceFunction : cudaErrorInvalidValue);
    *kernel = (cudaKernel_t)f;
    return cudaSuccess;
}

cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
                               size_t sharedMem, cudaStream_t stream)
{
    return launch(false, (CUfunction)kernel, gridDim, blockDim, args, sharedMem, stream);
}

cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
                                    size_t sharedMem, cudaStream_t stream)
{
    return launch(true, (CUfunction)kernel, gridDim, blockDim, args, sharedMem, stream);
}

cudaError_t cudaFuncGetParamInfo(const void *func, size_t paramIndex, size_t *paramOffset,
                                 size_t *paramSize)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    CUfunction f = find_kernel_or_handle(func);
    if (!f)
        return rt_error_set(cudaErrorInvalidDeviceFunction);
    return rt_error_cu(RT_CALL(drv, cuFuncGetParamInfo, f, paramIndex, paramOffset, paramSize));
}

cudaError_t cudaFuncGetName(const char **name, const void *func)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    if (!name)
        return rt_error_set(cudaErrorInvalidValue);
    CUfunction f = find_kernel_or_handle(func);
    if (!f)
        return rt_error_set(cudaErrorInvalidDeviceFunction);
    return rt_error_cu(RT_CALL(drv, cuFuncGetName, name, f));
}
