#include "context.h"

#include <pthread.h>
#include <stdatomic.h>

#include "error.h"

/* Primary contexts retained by the runtime, per device ordinal. */
#define RT_MAX_DEVICES 64

static pthread_mutex_t primary_lock = PTHREAD_MUTEX_INITIALIZER;
static CUcontext primary[RT_MAX_DEVICES];
/* Bumped by cudaDeviceReset: threads bound before it must bind again. */
static atomic_uint reset_generation;

static _Thread_local int tls_device;
static _Thread_local unsigned tls_generation;

static CUresult retain_primary(const rt_driver *drv, int dev, CUcontext *ctx)
{
    if (dev < 0 || dev >= RT_MAX_DEVICES)
        return CUDA_ERROR_INVALID_DEVICE;
    CUresult res = CUDA_SUCCESS;
    pthread_mutex_lock(&primary_lock);
    if (!primary[dev]) {
        CUdevice device;
        res = drv->cuDeviceGet(&device, dev);
        if (res == CUDA_SUCCESS)
            res = drv->cuDevicePrimaryCtxRetain(&primary[dev], device);
    }
    *ctx = primary[dev];
    pthread_mutex_unlock(&primary_lock);
    return res;
}

static CUresult bind_primary(const rt_driver *drv, int dev)
{
    unsigned generation = atomic_load(&reset_generation);
    CUcontext ctx = NULL;
    CUresult res = retain_primary(drv, dev, &ctx);
    if (res == CUDA_SUCCESS)
        res = drv->cuCtxSetCurrent(ctx);
    if (res == CUDA_SUCCESS)
        tls_generation = generation;
    return res;
}

cudaError_t rt_enter_no_context(const rt_driver **out)
{
    return rt_error_set(rt_driver_load(out));
}

cudaError_t rt_enter(const rt_driver **out)
{
    cudaError_t err = rt_enter_no_context(out);
    if (err != cudaSuccess)
        return err;
    CUcontext current = NULL;
    if (tls_generation == atomic_load(&reset_generation) &&
        (*out)->cuCtxGetCurrent(&current) == CUDA_SUCCESS && current)
        return cudaSuccess;
    return rt_error_cu(bind_primary(*out, tls_device));
}

int rt_current_device(void)
{
    return tls_device;
}

cudaError_t rt_set_device(const rt_driver *drv, int dev)
{
    int count = 0;
    CUresult res = RT_CALL(drv, cuDeviceGetCount, &count);
    if (res != CUDA_SUCCESS)
        return rt_error_cu(res);
    if (dev < 0 || dev >= count)
        return rt_error_set(cudaErrorInvalidDevice);
    res = bind_primary(drv, dev);
    if (res == CUDA_SUCCESS)
        tls_device = dev;
    return rt_error_cu(res);
}

cudaError_t rt_reset_device(const rt_driver *drv)
{
    int dev = tls_device;
    CUdevice device;
    CUresult res = drv->cuDeviceGet(&device, dev);
    pthread_mutex_lock(&primary_lock);
    if (res == CUDA_SUCCESS)
        res = RT_CALL(drv, cuDevicePrimaryCtxReset_v2, device);
    if (res == CUDA_SUCCESS && dev < RT_MAX_DEVICES)
        primary[dev] = NULL;
    atomic_fetch_add(&reset_generation, 1);
    pthread_mutex_unlock(&primary_lock);
    return rt_error_cu(res);
}
