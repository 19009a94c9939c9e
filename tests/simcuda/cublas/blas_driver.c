#include "blas_driver.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

#include "simcuda.h"

/* The CUDA version the library was "built" for, handed to every lookup. */
#define BLASDRV_CUDA_VERSION 13000

static struct {
    CUresult load_result;
    __typeof__(&cuInit) init;
    __typeof__(&cuCtxGetCurrent) ctx_get_current;
    __typeof__(&cuCtxSetCurrent) ctx_set_current;
    __typeof__(&cuDeviceGet) device_get;
    __typeof__(&cuDevicePrimaryCtxRetain) primary_retain;
    __typeof__(&cuMemAlloc_v2) mem_alloc;
    __typeof__(&cuMemFree_v2) mem_free;
    __typeof__(&simcuStatsAdd) stats_add;
} drv = {.load_result = CUDA_ERROR_NOT_INITIALIZED};

static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static void *lookup(__typeof__(&cuGetProcAddress_v2) gpa, const char *symbol)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult status;
    if (gpa(symbol, &fn, BLASDRV_CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &status) !=
        CUDA_SUCCESS)
        return NULL;
    return fn;
}

static void load(void)
{
    void *handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    __typeof__(&cuGetProcAddress_v2) gpa = NULL;
    if (handle)
        *(void **)&gpa = dlsym(handle, "cuGetProcAddress_v2");
    if (!gpa) {
        drv.load_result = CUDA_ERROR_NOT_INITIALIZED;
        return;
    }
    *(void **)&drv.init = lookup(gpa, "cuInit");
    *(void **)&drv.ctx_get_current = lookup(gpa, "cuCtxGetCurrent");
    *(void **)&drv.ctx_set_current = lookup(gpa, "cuCtxSetCurrent");
    *(void **)&drv.device_get = lookup(gpa, "cuDeviceGet");
    *(void **)&drv.primary_retain = lookup(gpa, "cuDevicePrimaryCtxRetain");
    *(void **)&drv.mem_alloc = lookup(gpa, "cuMemAlloc");
    *(void **)&drv.mem_free = lookup(gpa, "cuMemFree");
    *(void **)&drv.stats_add = lookup(gpa, "simcuStatsAdd");
    if (!drv.init || !drv.ctx_get_current || !drv.ctx_set_current || !drv.device_get ||
        !drv.primary_retain || !drv.mem_alloc || !drv.mem_free) {
        drv.load_result = CUDA_ERROR_NOT_SUPPORTED;
        return;
    }
    drv.load_result = drv.init(0);
}

static CUresult bind_primary_context(void)
{
    CUdevice dev;
    CUcontext ctx = NULL;
    CUresult res = drv.device_get(&dev, 0);
    if (res == CUDA_SUCCESS)
        res = drv.primary_retain(&ctx, dev);
    if (res == CUDA_SUCCESS)
        res = drv.ctx_set_current(ctx);
    return res;
}

CUresult blasdrv_enter(void)
{
    pthread_once(&load_once, load);
    if (drv.load_result != CUDA_SUCCESS)
        return drv.load_result;
    CUcontext current = NULL;
    CUresult res = drv.ctx_get_current(&current);
    if (res != CUDA_SUCCESS || current)
        return res;
    return bind_primary_context();
}

CUresult blasdrv_mem_alloc(CUdeviceptr *dptr, size_t bytes)
{
    CUresult res = blasdrv_enter();
    return res == CUDA_SUCCESS ? drv.mem_alloc(dptr, bytes) : res;
}

CUresult blasdrv_mem_free(CUdeviceptr dptr)
{
    CUresult res = blasdrv_enter();
    return res == CUDA_SUCCESS ? drv.mem_free(dptr) : res;
}

void blasdrv_count_gemm(void)
{
    if (blasdrv_enter() == CUDA_SUCCESS && drv.stats_add)
        drv.stats_add(SIMCU_COUNTER_GEMM_CALLS, 1);
}

static bool compute = true;
static pthread_once_t compute_once = PTHREAD_ONCE_INIT;

/* The same reading as the driver's: "0" is off, anything else on. */
static void read_compute(void)
{
    const char *e = getenv("SIMCUDA_COMPUTE");
    compute = !(e && e[0] == '0' && !e[1]);
}

bool blasdrv_compute(void)
{
    pthread_once(&compute_once, read_compute);
    return compute;
}
