#include "context.h"

#include "device.h"
#include "export.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#define CTX_MAGIC   0x53494d43u /* "SIMC" */
#define STACK_DEPTH 32

struct CUctx_st {
    unsigned magic;
    bool primary;
    unsigned flags;
    unsigned long long id;
};

static struct {
    pthread_mutex_t lock;
    struct CUctx_st ctx;
    int retained;
    bool active;
} primary = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .ctx = {.magic = CTX_MAGIC, .primary = true, .id = 1},
};

static atomic_ullong next_ctx_id = 2;

static __thread CUcontext stack[STACK_DEPTH];
static __thread int depth;

CUcontext ctx_current(void)
{
    return depth > 0 ? stack[depth - 1] : NULL;
}

bool ctx_valid(CUcontext ctx)
{
    return ctx && ctx->magic == CTX_MAGIC;
}

static bool ctx_alive(CUcontext ctx)
{
    if (!ctx->primary)
        return true;
    pthread_mutex_lock(&primary.lock);
    bool active = primary.active;
    pthread_mutex_unlock(&primary.lock);
    return active;
}

CUresult ctx_require(void)
{
    CUresult rc = device_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    CUcontext ctx = ctx_current();
    if (!ctx_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    return ctx_alive(ctx) ? CUDA_SUCCESS : CUDA_ERROR_CONTEXT_IS_DESTROYED;
}

SIMCU_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    CUresult rc = device_check(dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&primary.lock);
    primary.retained++;
    primary.active = true;
    pthread_mutex_unlock(&primary.lock);
    *pctx = &primary.ctx;
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    CUresult rc = device_check(dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    pthread_mutex_lock(&primary.lock);
    if (primary.retained == 0) {
        rc = CUDA_ERROR_INVALID_CONTEXT;
    } else if (--primary.retained == 0) {
        primary.active = false;
    }
    pthread_mutex_unlock(&primary.lock);
    return rc;
}

SIMCU_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    return cuDevicePrimaryCtxRelease_v2(dev);
}

/* Memory allocated in the context is not freed: simcuda has one address space and the
 * allocations stay counted, which the stats then show as a leak. */
SIMCU_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    CUresult rc = device_check(dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    pthread_mutex_lock(&primary.lock);
    primary.active = false;
    primary.ctx.flags = 0;
    pthread_mutex_unlock(&primary.lock);
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
    return cuDevicePrimaryCtxReset_v2(dev);
}

SIMCU_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    CUresult rc = device_check(dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!flags || !active)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&primary.lock);
    *flags = primary.ctx.flags;
    *active = primary.active;
    pthread_mutex_unlock(&primary.lock);
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
    CUresult rc = device_check(dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (flags &
        ~(unsigned)(CU_CTX_SCHED_MASK | CU_CTX_MAP_HOST | CU_CTX_LMEM_RESIZE_TO_MAX |
                    CU_CTX_COREDUMP_ENABLE | CU_CTX_USER_COREDUMP_ENABLE | CU_CTX_SYNC_MEMOPS))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&primary.lock);
    primary.ctx.flags = flags;
    pthread_mutex_unlock(&primary.lock);
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
    return cuDevicePrimaryCtxSetFlags_v2(dev, flags);
}

SIMCU_EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    CUresult rc = device_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = ctx_current();
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
    CUresult rc = device_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!ctx) {
        if (depth > 0)
            depth--;
        return CUDA_SUCCESS;
    }
    if (!ctx_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (depth == 0)
        depth = 1;
    stack[depth - 1] = ctx;
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
    CUresult rc = device_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!ctx_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (depth == STACK_DEPTH)
        return CUDA_ERROR_OUT_OF_MEMORY;
    stack[depth++] = ctx;
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
    CUresult rc = device_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (depth == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    depth--;
    if (pctx)
        *pctx = stack[depth];
    return CUDA_SUCCESS;
}

static CUresult ctx_device(CUdevice *device, CUcontext ctx)
{
    CUresult rc = device_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (!ctx_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    *device = 0;
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuCtxGetDevice(CUdevice *device)
{
    return ctx_device(device, ctx_current());
}

SIMCU_EXPORT CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
    return ctx_device(device, ctx ? ctx : ctx_current());
}

/* Every operation completes before its call returns, so there is never work to wait for. */
SIMCU_EXPORT CUresult cuCtxSynchronize(void)
{
    return ctx_require();
}

SIMCU_EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
    if (!ctx)
        return ctx_require();
    CUresult rc = device_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    return ctx_valid(ctx) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

SIMCU_EXPORT CUresult cuCtxGetFlags(unsigned int *flags)
{
    CUresult rc = ctx_require();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!flags)
        return CUDA_ERROR_INVALID_VALUE;
    *flags = ctx_current()->flags;
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
    CUresult rc = device_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    if (!ctx)
        ctx = ctx_current();
    if (!ctx_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    *version = 12050; /* the context API version of CUDA 12.5 and later drivers */
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuCtxGetId(CUcontext ctx, unsigned long long *ctxId)
{
    CUresult rc = device_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!ctxId)
        return CUDA_ERROR_INVALID_VALUE;
    if (!ctx)
        ctx = ctx_current();
    if (!ctx_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    *ctxId = ctx->id;
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
    CUresult rc = ctx_require();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (leastPriority)
        *leastPriority = 0;
    if (greatestPriority)
        *greatestPriority = -5;
    return CUDA_SUCCESS;
}

static CUresult ctx_create(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    CUresult rc = device_check(dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUctx_st *ctx = calloc(1, sizeof(*ctx));
    if (!ctx)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *ctx = (struct CUctx_st){.magic = CTX_MAGIC, .flags = flags, .id = next_ctx_id++};
    rc = cuCtxPushCurrent_v2(ctx);
    if (rc != CUDA_SUCCESS) {
        free(ctx);
        return rc;
    }
    *pctx = ctx;
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    return ctx_create(pctx, flags, dev);
}

SIMCU_EXPORT CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray,
                                     int numParams, unsigned int flags, CUdevice dev)
{
    (void)paramsArray;
    if (numParams < 0)
        return CUDA_ERROR_INVALID_VALUE;
    return ctx_create(pctx, flags, dev);
}

SIMCU_EXPORT CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
                                     unsigned int flags, CUdevice dev)
{
    (void)ctxCreateParams;
    return ctx_create(pctx, flags, dev);
}

SIMCU_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    CUresult rc = device_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!ctx_valid(ctx) || ctx->primary)
        return CUDA_ERROR_INVALID_CONTEXT;
    /* Only the calling thread's stack can be cleaned; as on a GPU, other threads that still
     * hold the context must not use it. */
    for (int i = 0; i < depth; i++)
        if (stack[i] == ctx) {
            for (int j = i; j + 1 < depth; j++)
                stack[j] = stack[j + 1];
            depth--;
            i--;
        }
    ctx->magic = 0;
    free(ctx);
    return CUDA_SUCCESS;
}
