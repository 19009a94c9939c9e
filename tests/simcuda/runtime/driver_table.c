#include "driver_table.h"

#include <dlfcn.h>
#include <pthread.h>

#include "error.h"

static rt_driver table;
static cudaError_t load_error = cudaSuccess;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static void resolve_all(__typeof__(&cuGetProcAddress_v2) lookup)
{
    CUdriverProcAddressQueryResult status;
#define RT_DRV(field, proto, symbol, flags)                                                        \
    if (lookup(symbol, (void **)&table.field, RT_DRIVER_VERSION, flags, &status) != CUDA_SUCCESS)  \
        table.field = NULL;
#include "driver_api.def"
#undef RT_DRV
}

static void load(void)
{
    /* RTLD_LOCAL, as the real runtime: the driver's symbols stay out of the global scope. */
    void *handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        load_error = cudaErrorInsufficientDriver;
        return;
    }
    __typeof__(&cuGetProcAddress_v2) lookup;
    *(void **)&lookup = dlsym(handle, "cuGetProcAddress_v2");
    if (!lookup) {
        load_error = cudaErrorInsufficientDriver;
        return;
    }
    resolve_all(lookup);
    if (!table.cuInit || !table.cuDeviceGet || !table.cuCtxGetCurrent || !table.cuCtxSetCurrent ||
        !table.cuDevicePrimaryCtxRetain) {
        load_error = cudaErrorInsufficientDriver;
        return;
    }
    load_error = rt_error_from_cu(table.cuInit(0));
}

cudaError_t rt_driver_load(const rt_driver **out)
{
    pthread_once(&load_once, load);
    *out = &table;
    return load_error;
}
