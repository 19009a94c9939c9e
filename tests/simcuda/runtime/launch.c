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

#include <uthash.h>

#include "api_ptsz.h"
#include "context.h"
#include "error.h"
#include "launch.h"
#include "simcuda.h"

/* One entry per host function: a kernel the program registered (func set at once) or a fat
 * binary's kernel (device_name set; its no-op CUfunction is made at its first use, since the
 * runtime registers every kernel of every library at load time, before any driver call). */
typedef struct kernel_entry {
    const void *fn;
    CUfunction func;
    const char *device_name;
    const void *image;      /* the fat binary it came in */
    UT_hash_handle hh;      /* by fn */
    UT_hash_handle hh_func; /* by func, once made */
} kernel_entry;

static pthread_rwlock_t kernels_lock = PTHREAD_RWLOCK_INITIALIZER;
static kernel_entry *by_fn, *by_func;

static kernel_entry *lookup(const void *fn)
{
    kernel_entry *e = NULL;
    HASH_FIND_PTR(by_fn, &fn, e);
    return e;
}

static void set_function(kernel_entry *e, CUfunction func)
{
    e->func = func;
    HASH_ADD(hh_func, by_func, func, sizeof(CUfunction), e);
}

/* The CUfunction of a registered host function, made now for a fat binary's kernel; NULL if
 * fn was never registered. */
static CUfunction find_kernel(const rt_driver *drv, const void *fn)
{
    pthread_rwlock_rdlock(&kernels_lock);
    kernel_entry *e = lookup(fn);
    CUfunction func = e ? e->func : NULL;
    pthread_rwlock_unlock(&kernels_lock);
    if (func || !e || !drv->simcuRegisterNoopKernel)
        return func;
    pthread_rwlock_wrlock(&kernels_lock);
    if (!e->func && drv->simcuRegisterNoopKernel(e->device_name, e->image, &func) == CUDA_SUCCESS)
        set_function(e, func);
    func = e->func;
    pthread_rwlock_unlock(&kernels_lock);
    return func;
}

/* The function queries take a host function or, as in the real runtime, a cudaKernel_t (here
 * the CUfunction itself). */
static CUfunction find_kernel_or_handle(const rt_driver *drv, const void *fn)
{
    CUfunction func = find_kernel(drv, fn);
    if (func)
        return func;
    kernel_entry *e = NULL;
    pthread_rwlock_rdlock(&kernels_lock);
    HASH_FIND(hh_func, by_func, &fn, sizeof(CUfunction), e);
    pthread_rwlock_unlock(&kernels_lock);
    return e ? e->func : NULL;
}

static bool add_kernel(const void *fn, CUfunction func, const char *device_name, const void *image)
{
    kernel_entry *e = calloc(1, sizeof *e);
    if (!e)
        return false;
    e->fn = fn;
    e->device_name = device_name;
    e->image = image;
    pthread_rwlock_wrlock(&kernels_lock);
    if (lookup(fn)) {
        free(e);
    } else {
        HASH_ADD_PTR(by_fn, fn, e);
        if (func)
            set_function(e, func);
    }
    pthread_rwlock_unlock(&kernels_lock);
    return true;
}

CUfunction rt_kernel_function(const rt_driver *drv, const void *fn)
{
    return fn ? find_kernel_or_handle(drv, fn) : NULL;
}

bool rt_kernel_declare(const void *fn, const char *device_name, const void *image)
{
    return fn && add_kernel(fn, NULL, device_name, image);
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
    pthread_rwlock_rdlock(&kernels_lock);
    bool known = lookup((const void *)fn) != NULL;
    pthread_rwlock_unlock(&kernels_lock);
    if (known)
        return cudaSuccess;
    CUfunction func = NULL;
    CUresult res = RT_CALL(drv, simcuRegisterKernel, fn, name, nparams, param_sizes, &func);
    if (res != CUDA_SUCCESS)
        return rt_error_cu(res);
    return add_kernel((const void *)fn, func, NULL, NULL) ? cudaSuccess
                                                          : rt_error_set(cudaErrorMemoryAllocation);
}

/* fn: a registered host function, or (handle) a cudaKernel_t. */
static cudaError_t launch(bool per_thread, const void *fn, bool handle, dim3 grid, dim3 block,
                          void **args, size_t shmem, cudaStream_t stream)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    CUfunction func = handle ? (CUfunction)fn : find_kernel(drv, fn);
    if (!func)
        return rt_error_set(cudaErrorInvalidDeviceFunction);
    __typeof__(&cuLaunchKernel) cu = per_thread ? drv->cuLaunchKernel_ptsz : drv->cuLaunchKernel;
    if (!cu)
        return rt_error_set(cudaErrorNotSupported);
    return rt_error_cu(cu(func, grid.x, grid.y, grid.z, block.x, block.y, block.z, (unsigned)shmem,
                          (CUstream)stream, args, NULL));
}

cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                             size_t sharedMem, cudaStream_t stream)
{
    return launch(false, func, false, gridDim, blockDim, args, sharedMem, stream);
}

cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                  size_t sharedMem, cudaStream_t stream)
{
    return launch(true, func, false, gridDim, blockDim, args, sharedMem, stream);
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
    CUfunction f = find_kernel(drv, func);
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
    CUfunction f = find_kernel(drv, func);
    if (!kernel || !f)
        return rt_error_set(kernel ? cudaErrorInvalidDeviceFunction : cudaErrorInvalidValue);
    *kernel = (cudaKernel_t)f;
    return cudaSuccess;
}

cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
                               size_t sharedMem, cudaStream_t stream)
{
    return launch(false, kernel, true, gridDim, blockDim, args, sharedMem, stream);
}

cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
                                    size_t sharedMem, cudaStream_t stream)
{
    return launch(true, kernel, true, gridDim, blockDim, args, sharedMem, stream);
}

cudaError_t cudaFuncGetParamInfo(const void *func, size_t paramIndex, size_t *paramOffset,
                                 size_t *paramSize)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    CUfunction f = find_kernel_or_handle(drv, func);
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
    CUfunction f = find_kernel_or_handle(drv, func);
    if (!f)
        return rt_error_set(cudaErrorInvalidDeviceFunction);
    return rt_error_cu(RT_CALL(drv, cuFuncGetName, name, f));
}

/* Launches run one after another anyway, so a cooperative launch is an ordinary one. */
cudaError_t cudaLaunchCooperativeKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                        size_t sharedMem, cudaStream_t stream)
{
    return launch(false, func, false, gridDim, blockDim, args, sharedMem, stream);
}
