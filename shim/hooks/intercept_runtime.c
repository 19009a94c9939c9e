/* intercept_runtime: runtime allocation entry points → track.h. Thin hooks: reserve, call the
 * real runtime, record; a free is recorded before the real free. The guard is held across the
 * real call, so the driver calls the runtime makes for us only forward. */
#include "intercept_runtime.h"

#include "intercept_driver.h"
#include "intercept_lookup.h"
#include "torch_alloc.h"
#include "track.h"

#define RT_FN(name) (real_runtime_ready() ? REAL(name) : NULL)

/* The runtime allocates on its current device. */
static MS_HOT int rt_device(void)
{
    if (intercept_single_device()) {
        intercept_driver_describe(0);
        return 0;
    }
    cudaError_t (*fn)(int *) = RT_FN(cudaGetDevice);
    int dev = 0;
    if (!fn || fn(&dev) != cudaSuccess || dev < 0 || dev > UINT8_MAX)
        dev = 0;
    intercept_driver_describe(dev);
    return dev;
}

static void rt_end(struct track_ticket *t, cudaError_t r, const void *addr, void *stream)
{
    int ok = r == cudaSuccess && addr != NULL;
    track_alloc_end(t, ok, r == cudaErrorMemoryAllocation, ok ? (uint64_t)(uintptr_t)addr : 0,
                    (uint64_t)(uintptr_t)stream);
}

/* cudaMalloc, cudaMallocManaged and the async ones differ only in their call. Inlined: one
 * frame fewer for every stack capture to unwind and throw away. */
static MS_HOT cudaError_t rt_alloc(enum mst_alloc_kind kind, void **devPtr, size_t size,
                                   void *stream, cudaError_t (*call)(void **, size_t, const void *),
                                   const void *ctx)
{
    struct track_ticket t;
    cudaError_t r = cudaErrorMemoryAllocation;
    torch_alloc_install();
    if (track_alloc_begin(&t, rt_device(), kind, intercept_plain_bytes(size), size) == 0) {
        uint64_t a = 0;
        int served = devPtr ? track_alloc_serve(&t, &a, (uint64_t)(uintptr_t)stream) : 0;
        if (served) {
            r = served > 0 ? cudaSuccess : cudaErrorMemoryAllocation;
            *devPtr = served > 0 ? (void *)(uintptr_t)a : NULL;
            return r;
        }
        r = call(devPtr, size, ctx);
        rt_end(&t, r, r == cudaSuccess && devPtr ? *devPtr : NULL, stream);
    }
    return r;
}

/* --- the calls, each with what it needs beyond (devPtr, size) -------------------------------- */

struct malloc_call {
    cudaError_t (*fn)(void **, size_t);
};

static cudaError_t call_malloc(void **p, size_t size, const void *ctx)
{
    const struct malloc_call *c = ctx;
    return c->fn(p, size);
}

struct managed_call {
    cudaError_t (*fn)(void **, size_t, unsigned int);
    unsigned int flags;
};

static cudaError_t call_managed(void **p, size_t size, const void *ctx)
{
    const struct managed_call *c = ctx;
    return c->fn(p, size, c->flags);
}

struct async_call {
    cudaError_t (*fn)(void **, size_t, cudaStream_t);
    cudaStream_t stream;
};

static cudaError_t call_async(void **p, size_t size, const void *ctx)
{
    const struct async_call *c = ctx;
    return c->fn(p, size, c->stream);
}

struct pool_call {
    cudaError_t (*fn)(void **, size_t, cudaMemPool_t, cudaStream_t);
    cudaMemPool_t pool;
    cudaStream_t stream;
};

static cudaError_t call_pool(void **p, size_t size, const void *ctx)
{
    const struct pool_call *c = ctx;
    return c->fn(p, size, c->pool, c->stream);
}

/* --- allocation ------------------------------------------------------------------------------ */

cudaError_t cudaMalloc(void **devPtr, size_t size)
{
    struct malloc_call c = {RT_FN(cudaMalloc)};
    if (!c.fn)
        return cudaErrorInitializationError;
    if (!track_guard_enter())
        return c.fn(devPtr, size);
    cudaError_t r = rt_alloc(MST_KIND_CUDA_MALLOC, devPtr, size, NULL, call_malloc, &c);
    track_guard_leave();
    return r;
}

cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
    struct managed_call c = {RT_FN(cudaMallocManaged), flags};
    if (!c.fn)
        return cudaErrorInitializationError;
    if (!track_guard_enter())
        return c.fn(devPtr, size, flags);
    cudaError_t r = rt_alloc(MST_KIND_CUDA_MALLOC_MANAGED, devPtr, size, NULL, call_managed, &c);
    track_guard_leave();
    return r;
}

static cudaError_t malloc_async(cudaError_t (*fn)(void **, size_t, cudaStream_t), void **devPtr,
                                size_t size, cudaStream_t stream)
{
    struct async_call c = {fn, stream};
    if (!fn)
        return cudaErrorInitializationError;
    if (!track_guard_enter())
        return fn(devPtr, size, stream);
    track_stream_alloc((uint64_t)(uintptr_t)stream);
    cudaError_t r = rt_alloc(MST_KIND_CUDA_MALLOC_ASYNC, devPtr, size, stream, call_async, &c);
    track_guard_leave();
    return r;
}

cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream)
{
    return malloc_async(RT_FN(cudaMallocAsync), devPtr, size, hStream);
}

cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream)
{
    return malloc_async(RT_FN(cudaMallocAsync_ptsz), devPtr, size, hStream);
}

/* The pool's device is not asked for: the current device is charged. */
static cudaError_t malloc_from_pool(cudaError_t (*fn)(void **, size_t, cudaMemPool_t, cudaStream_t),
                                    void **ptr, size_t size, cudaMemPool_t pool,
                                    cudaStream_t stream)
{
    struct pool_call c = {fn, pool, stream};
    if (!fn)
        return cudaErrorInitializationError;
    if (!track_guard_enter())
        return fn(ptr, size, pool, stream);
    cudaError_t r =
        rt_alloc(MST_KIND_CUDA_MALLOC_FROM_POOL_ASYNC, ptr, size, stream, call_pool, &c);
    track_guard_leave();
    return r;
}

cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t memPool,
                                    cudaStream_t stream)
{
    return malloc_from_pool(RT_FN(cudaMallocFromPoolAsync), ptr, size, memPool, stream);
}

cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t memPool,
                                         cudaStream_t stream)
{
    return malloc_from_pool(RT_FN(cudaMallocFromPoolAsync_ptsz), ptr, size, memPool, stream);
}

/* Pitched allocations: reserved at an upper bound, charged at pitch × rows once the runtime
 * chose the pitch. If the correction crosses the ceiling, the allocation is undone. */
static cudaError_t settle_pitch(struct track_ticket *t, int dev, enum mst_alloc_kind kind,
                                cudaError_t r, void *addr, uint64_t actual)
{
    if (r == cudaSuccess && addr && intercept_recharge(t, dev, kind, actual) != 0) {
        cudaError_t (*release)(void *) = REAL(cudaFree);
        if (release)
            release(addr);
        return cudaErrorMemoryAllocation;
    }
    rt_end(t, r, addr, NULL);
    return r;
}

cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height)
{
    cudaError_t (*fn)(void **, size_t *, size_t, size_t) = RT_FN(cudaMallocPitch);
    if (!fn)
        return cudaErrorInitializationError;
    if (!track_guard_enter())
        return fn(devPtr, pitch, width, height);
    struct track_ticket t;
    const enum mst_alloc_kind kind = MST_KIND_CUDA_MALLOC_PITCH;
    int dev = rt_device();
    cudaError_t r = cudaErrorMemoryAllocation;
    if (track_alloc_begin(&t, dev, kind, intercept_pitch_bound(width, height),
                          intercept_mul(width, height)) == 0) {
        r = fn(devPtr, pitch, width, height);
        void *addr = r == cudaSuccess && devPtr && pitch ? *devPtr : NULL;
        r = settle_pitch(&t, dev, kind, r, addr, addr ? intercept_mul(*pitch, height) : 0);
    }
    track_guard_leave();
    return r;
}

cudaError_t cudaMalloc3D(struct cudaPitchedPtr *pitchedDevPtr, struct cudaExtent extent)
{
    cudaError_t (*fn)(struct cudaPitchedPtr *, struct cudaExtent) = RT_FN(cudaMalloc3D);
    if (!fn)
        return cudaErrorInitializationError;
    if (!track_guard_enter())
        return fn(pitchedDevPtr, extent);
    struct track_ticket t;
    const enum mst_alloc_kind kind = MST_KIND_CUDA_MALLOC_3D;
    uint64_t slices = intercept_mul(extent.height, extent.depth);
    int dev = rt_device();
    cudaError_t r = cudaErrorMemoryAllocation;
    if (track_alloc_begin(&t, dev, kind, intercept_pitch_bound(extent.width, slices),
                          intercept_mul(extent.width, slices)) == 0) {
        r = fn(pitchedDevPtr, extent);
        void *addr = r == cudaSuccess && pitchedDevPtr ? pitchedDevPtr->ptr : NULL;
        r = settle_pitch(&t, dev, kind, r, addr,
                         addr ? intercept_mul(pitchedDevPtr->pitch, slices) : 0);
    }
    track_guard_leave();
    return r;
}

/* --- free ------------------------------------------------------------------------------------ */

cudaError_t cudaFree(void *devPtr)
{
    cudaError_t (*fn)(void *) = RT_FN(cudaFree);
    if (!fn)
        return cudaErrorInitializationError;
    if (!devPtr || !track_guard_enter())
        return fn(devPtr);
    cudaError_t r = cudaSuccess;
    if (track_free((uint64_t)(uintptr_t)devPtr, MST_KIND_CUDA_MALLOC, 0) != TRACK_FREED_SERVED)
        r = fn(devPtr);
    track_guard_leave();
    return r;
}

static cudaError_t free_async(cudaError_t (*fn)(void *, cudaStream_t), void *devPtr,
                              cudaStream_t stream)
{
    if (!fn)
        return cudaErrorInitializationError;
    if (!devPtr || !track_guard_enter())
        return fn(devPtr, stream);
    cudaError_t r = cudaSuccess;
    if (track_free((uint64_t)(uintptr_t)devPtr, MST_KIND_CUDA_MALLOC_ASYNC,
                   (uint64_t)(uintptr_t)stream) != TRACK_FREED_SERVED)
        r = fn(devPtr, stream);
    track_guard_leave();
    return r;
}

cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream)
{
    return free_async(RT_FN(cudaFreeAsync), devPtr, hStream);
}

cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream)
{
    return free_async(RT_FN(cudaFreeAsync_ptsz), devPtr, hStream);
}

/* --- memory info ----------------------------------------------------------------------------- */

cudaError_t cudaMemGetInfo(size_t *free, size_t *total)
{
    cudaError_t (*fn)(size_t *, size_t *) = RT_FN(cudaMemGetInfo);
    if (!fn)
        return cudaErrorInitializationError;
    if (!track_guard_enter())
        return fn(free, total);
    cudaError_t r = fn(free, total);
    if (r == cudaSuccess)
        intercept_mem_info(rt_device(), free, total);
    track_guard_leave();
    return r;
}
