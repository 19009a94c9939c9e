/* intercept_driver: driver allocation entry points → track.h. Each hook is thin: reserve,
 * call the real function, record; a free is recorded before the real free. While the
 * recursion guard is held (the runtime's own driver calls, the shim's) a hook only forwards. */
#include "intercept_driver.h"

#include <limits.h>
#include <stdatomic.h>
#include <string.h>

#include "torch_alloc.h"

static MS_NOINLINE MS_COLD void intercept_driver_describe_new(int ordinal)
{
    if (!real_driver_load())
        return;
    CUresult (*get)(CUdevice *, int) = REAL(cuDeviceGet);
    CUresult (*init)(unsigned int) = REAL(cuInit);
    CUresult (*name_of)(char *, int, CUdevice) = REAL(cuDeviceGetName);
    CUresult (*total_of)(size_t *, CUdevice) = REAL(cuDeviceTotalMem_v2);
    CUresult (*attr)(int *, CUdevice_attribute, CUdevice) = REAL(cuDeviceGetAttribute);
    if (!get || !name_of || !total_of || !attr)
        return;
    CUdevice dev;
    CUresult r = get(&dev, ordinal);
    if (r == CUDA_ERROR_NOT_INITIALIZED && init && init(0) == CUDA_SUCCESS)
        r = get(&dev, ordinal); /* a runtime call before the runtime initialised the driver */
    char name[256] = "";
    size_t total = 0;
    int major = 0, minor = 0;
    if (r != CUDA_SUCCESS || total_of(&total, dev) != CUDA_SUCCESS)
        return;
    name_of(name, sizeof name, dev);
    name[sizeof name - 1] = '\0';
    attr(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    attr(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    track_device_info(ordinal, name, total, major, minor);
}

MS_HOT void intercept_driver_describe(int ordinal)
{
    if (!track_device_known(ordinal))
        intercept_driver_describe_new(ordinal);
}

/* 0 until the driver told the device count, then 1 for one device, 2 for more. */
static _Atomic int drv_devices_seen;

/* The first answer of intercept_single_device, out of line: the hooks test one known value. */
static MS_NOINLINE int drv_count_devices(void)
{
    CUresult (*count)(int *) = real_driver_ready() ? REAL(cuDeviceGetCount) : NULL;
    int n = 0;
    if (!count || count(&n) != CUDA_SUCCESS || n < 1)
        return 0;
    atomic_store_explicit(&drv_devices_seen, n == 1 ? 1 : 2, memory_order_relaxed);
    return n == 1;
}

MS_HOT int intercept_single_device(void)
{
    int s = atomic_load_explicit(&drv_devices_seen, memory_order_relaxed);
    if (ms_likely(s == 1))
        return 1;
    return s ? 0 : drv_count_devices();
}

/* With one device there is nothing to ask: asking costs a call into the driver (its context
 * lookup, thread-local state) on every allocation. */
int intercept_driver_current_device(void)
{
    if (intercept_single_device())
        return 0;
    CUresult (*fn)(CUdevice *) = REAL(cuCtxGetDevice);
    CUdevice dev = 0;
    if (!fn || fn(&dev) != CUDA_SUCCESS || dev < 0 || dev > UINT8_MAX)
        return 0;
    return dev;
}

int intercept_recharge(struct track_ticket *t, int device, enum mst_alloc_kind kind,
                       uint64_t actual)
{
    if (actual == t->bytes)
        return 0;
    uint64_t requested = t->requested;
    track_alloc_end(t, 0, 0, 0, 0);
    return track_alloc_begin(t, device, kind, actual, requested);
}

void intercept_mem_info(int device, size_t *free_bytes, size_t *total_bytes)
{
    size_t f = free_bytes ? *free_bytes : 0, t = total_bytes ? *total_bytes : 0;
    intercept_driver_describe(device);
    track_mem_info(device, &f, &t);
    if (free_bytes)
        *free_bytes = f;
    if (total_bytes)
        *total_bytes = t;
}

/* --- allocation ------------------------------------------------------------------------------ */

/* The device and ticket of one driver allocation; 0 to go ahead with the real call. */
static int drv_begin(struct track_ticket *t, int *device, enum mst_alloc_kind kind, uint64_t bytes,
                     uint64_t requested)
{
    *device = intercept_driver_current_device();
    intercept_driver_describe(*device);
    return track_alloc_begin(t, *device, kind, bytes, requested);
}

static void drv_end(struct track_ticket *t, CUresult r, uint64_t addr, uint64_t stream)
{
    int ok = r == CUDA_SUCCESS && addr != 0;
    track_alloc_end(t, ok, r == CUDA_ERROR_OUT_OF_MEMORY, ok ? addr : 0, stream);
}

#define DRV_FN(name) (real_driver_ready() ? REAL(name) : NULL)

/* cuMemAlloc and friends differ only in their call: `call` makes it with what it needs beyond
 * the size, and hands back the new address (0 on failure). */
typedef CUresult (*drv_call)(const void *ctx, uint64_t *addr);

static CUresult drv_alloc(enum mst_alloc_kind kind, size_t bytes, CUstream stream, drv_call call,
                          const void *ctx, CUdeviceptr *serve_to)
{
    struct track_ticket t;
    int dev;
    uint64_t addr = 0;
    torch_alloc_install();
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
    if (!track_guard_enter())
        return call(ctx, &addr);
    if (serve_to && stream)
        track_stream_alloc((uint64_t)(uintptr_t)stream);
    if (drv_begin(&t, &dev, kind, intercept_plain_bytes(bytes), bytes) == 0) {
        /* serve_to: the caller's pointer, where the shim may serve it (residency.h). */
        int served = serve_to ? track_alloc_serve(&t, &addr, (uint64_t)(uintptr_t)stream) : 0;
        if (served) {
            track_guard_leave();
            if (served > 0)
                *serve_to = addr;
            return served > 0 ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
        }
        r = call(ctx, &addr);
        drv_end(&t, r, addr, (uint64_t)(uintptr_t)stream);
    }
    track_guard_leave();
    return r;
}

struct alloc_call {
    CUresult (*fn)(CUdeviceptr *, size_t);
    CUdeviceptr *dptr;
    size_t bytes;
};

static CUresult call_alloc(const void *ctx, uint64_t *addr)
{
    const struct alloc_call *c = ctx;
    CUresult r = c->fn(c->dptr, c->bytes);
    *addr = r == CUDA_SUCCESS && c->dptr ? *c->dptr : 0;
    return r;
}

/* Apart from cuMemAlloc_v2 so that its pass-through below needs no frame of its own. */
static MS_NOINLINE CUresult drv_alloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    CUresult (*fn)(CUdeviceptr *, size_t) = DRV_FN(cuMemAlloc_v2);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (guard_held())
        return fn(dptr, bytesize);
    struct alloc_call c = {fn, dptr, bytesize};
    return drv_alloc(MST_KIND_CU_MEM_ALLOC, bytesize, NULL, call_alloc, &c, dptr);
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    /* The runtime's own call inside cudaMalloc's hook, the commonest way here: straight on. */
    CUresult (*fn)(CUdeviceptr *, size_t) = REAL(cuMemAlloc_v2);
    if (real_driver_resolved() && fn && guard_held())
        return fn(dptr, bytesize);
    return drv_alloc_v2(dptr, bytesize);
}

/* The 32-bit ABI of CUDA 2.x, still handed out to a lookup that asks for it. */
struct alloc_v1_call {
    CUresult (*fn)(unsigned int *, unsigned int);
    unsigned int *dptr;
    unsigned int bytes;
};

static CUresult call_alloc_v1(const void *ctx, uint64_t *addr)
{
    const struct alloc_v1_call *c = ctx;
    CUresult r = c->fn(c->dptr, c->bytes);
    *addr = r == CUDA_SUCCESS && c->dptr ? *c->dptr : 0;
    return r;
}

CUresult cuMemAlloc_v1(unsigned int *dptr, unsigned int bytesize)
{
    struct alloc_v1_call c = {DRV_FN(cuMemAlloc_v1), dptr, bytesize};
    return c.fn ? drv_alloc(MST_KIND_CU_MEM_ALLOC, bytesize, NULL, call_alloc_v1, &c, NULL)
                : CUDA_ERROR_NOT_INITIALIZED;
}

struct managed_call {
    CUresult (*fn)(CUdeviceptr *, size_t, unsigned int);
    CUdeviceptr *dptr;
    size_t bytes;
    unsigned int flags;
};

static CUresult call_managed(const void *ctx, uint64_t *addr)
{
    const struct managed_call *c = ctx;
    CUresult r = c->fn(c->dptr, c->bytes, c->flags);
    *addr = r == CUDA_SUCCESS && c->dptr ? *c->dptr : 0;
    return r;
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    struct managed_call c = {DRV_FN(cuMemAllocManaged), dptr, bytesize, flags};
    return c.fn ? drv_alloc(MST_KIND_CU_MEM_ALLOC_MANAGED, bytesize, NULL, call_managed, &c, NULL)
                : CUDA_ERROR_NOT_INITIALIZED;
}

struct async_call {
    CUresult (*fn)(CUdeviceptr *, size_t, CUstream);
    CUdeviceptr *dptr;
    size_t bytes;
    CUstream stream;
};

static CUresult call_async(const void *ctx, uint64_t *addr)
{
    const struct async_call *c = ctx;
    CUresult r = c->fn(c->dptr, c->bytes, c->stream);
    *addr = r == CUDA_SUCCESS && c->dptr ? *c->dptr : 0;
    return r;
}

CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    struct async_call c = {DRV_FN(cuMemAllocAsync), dptr, bytesize, hStream};
    return c.fn ? drv_alloc(MST_KIND_CU_MEM_ALLOC_ASYNC, bytesize, hStream, call_async, &c, dptr)
                : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    struct async_call c = {DRV_FN(cuMemAllocAsync_ptsz), dptr, bytesize, hStream};
    return c.fn ? drv_alloc(MST_KIND_CU_MEM_ALLOC_ASYNC, bytesize, hStream, call_async, &c, dptr)
                : CUDA_ERROR_NOT_INITIALIZED;
}

/* The pool's device cannot be queried from a CUmemoryPool; the current context's is used. */
struct pool_call {
    CUresult (*fn)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
    CUdeviceptr *dptr;
    size_t bytes;
    CUmemoryPool pool;
    CUstream stream;
};

static CUresult call_pool(const void *ctx, uint64_t *addr)
{
    const struct pool_call *c = ctx;
    CUresult r = c->fn(c->dptr, c->bytes, c->pool, c->stream);
    *addr = r == CUDA_SUCCESS && c->dptr ? *c->dptr : 0;
    return r;
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                 CUstream hStream)
{
    struct pool_call c = {DRV_FN(cuMemAllocFromPoolAsync), dptr, bytesize, pool, hStream};
    return c.fn ? drv_alloc(MST_KIND_CU_MEM_ALLOC_FROM_POOL_ASYNC, bytesize, hStream, call_pool, &c,
                            NULL)
                : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                      CUstream hStream)
{
    struct pool_call c = {DRV_FN(cuMemAllocFromPoolAsync_ptsz), dptr, bytesize, pool, hStream};
    return c.fn ? drv_alloc(MST_KIND_CU_MEM_ALLOC_FROM_POOL_ASYNC, bytesize, hStream, call_pool, &c,
                            NULL)
                : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                            unsigned int ElementSizeBytes)
{
    CUresult (*fn)(CUdeviceptr *, size_t *, size_t, size_t, unsigned int) =
        DRV_FN(cuMemAllocPitch_v2);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!track_guard_enter())
        return fn(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
    struct track_ticket t;
    int dev;
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
    const enum mst_alloc_kind kind = MST_KIND_CU_MEM_ALLOC_PITCH;
    if (drv_begin(&t, &dev, kind, intercept_pitch_bound(WidthInBytes, Height),
                  intercept_mul(WidthInBytes, Height)) == 0) {
        r = fn(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
        uint64_t addr = r == CUDA_SUCCESS && dptr ? *dptr : 0;
        if (addr && pPitch && intercept_recharge(&t, dev, kind, intercept_mul(*pPitch, Height))) {
            CUresult (*release)(CUdeviceptr) = REAL(cuMemFree_v2);
            if (release)
                release(addr);
            r = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            drv_end(&t, r, addr, 0);
        }
    }
    track_guard_leave();
    return r;
}

/* --- free ------------------------------------------------------------------------------------ */

/* Apart from cuMemFree_v2 so that its pass-through below needs no frame of its own. */
static MS_NOINLINE CUresult drv_free_v2(CUdeviceptr dptr)
{
    CUresult (*fn)(CUdeviceptr) = DRV_FN(cuMemFree_v2);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!dptr || !track_guard_enter())
        return fn(dptr);
    CUresult r = CUDA_SUCCESS;
    if (track_free(dptr, MST_KIND_CU_MEM_ALLOC, 0) != TRACK_FREED_SERVED)
        r = fn(dptr);
    track_guard_leave();
    return r;
}

CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    /* The runtime's own call inside cudaFree's hook, the commonest way here: straight on. */
    CUresult (*fn)(CUdeviceptr) = REAL(cuMemFree_v2);
    if (real_driver_resolved() && fn && (!dptr || guard_held()))
        return fn(dptr);
    return drv_free_v2(dptr);
}

CUresult cuMemFree_v1(unsigned int dptr)
{
    CUresult (*fn)(unsigned int) = DRV_FN(cuMemFree_v1);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!dptr || !track_guard_enter())
        return fn(dptr);
    track_free(dptr, MST_KIND_CU_MEM_ALLOC, 0);
    CUresult r = fn(dptr);
    track_guard_leave();
    return r;
}

static CUresult free_async(CUresult (*fn)(CUdeviceptr, CUstream), CUdeviceptr dptr, CUstream stream)
{
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!dptr || !track_guard_enter())
        return fn(dptr, stream);
    CUresult r = CUDA_SUCCESS;
    if (track_free(dptr, MST_KIND_CU_MEM_ALLOC_ASYNC, (uint64_t)(uintptr_t)stream) !=
        TRACK_FREED_SERVED)
        r = fn(dptr, stream);
    track_guard_leave();
    return r;
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    return free_async(DRV_FN(cuMemFreeAsync), dptr, hStream);
}

CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
    return free_async(DRV_FN(cuMemFreeAsync_ptsz), dptr, hStream);
}

/* --- virtual memory -------------------------------------------------------------------------- */

static int location_is_host(CUmemLocationType type)
{
    return type == CU_MEM_LOCATION_TYPE_HOST || type == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
           type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT;
}

/* Physical memory is charged at its granularity-rounded size; host-located memory is
 * recorded but not charged. The device comes from the properties, never from a context the
 * calling thread may not have (HAMi-core #172, #187). */
static uint64_t create_bytes(const CUmemAllocationProp *prop, size_t size)
{
    CUresult (*gran)(size_t *, const CUmemAllocationProp *, CUmemAllocationGranularity_flags) =
        REAL(cuMemGetAllocationGranularity);
    size_t g = 0;
    if (!gran || gran(&g, prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS || g == 0)
        return size;
    return size % g ? intercept_mul(size / g + 1, g) : size;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                     const CUmemAllocationProp *prop, unsigned long long flags)
{
    CUresult (*fn)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                   unsigned long long) = DRV_FN(cuMemCreate);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    torch_alloc_install();
    if (!handle || !prop || !track_guard_enter())
        return fn(handle, size, prop, flags);
    int host = location_is_host(prop->location.type);
    int dev = prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE && prop->location.id >= 0 &&
                      prop->location.id <= UINT8_MAX
                  ? prop->location.id
                  : intercept_driver_current_device();
    intercept_driver_describe(dev);
    struct track_ticket t;
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
    if (track_alloc_begin(&t, dev, MST_KIND_CU_MEM_CREATE, host ? 0 : create_bytes(prop, size),
                          size) == 0) {
        t.flags |= MST_ALLOC_F_HANDLE | (host ? MST_ALLOC_F_HOST : 0);
        r = fn(handle, size, prop, flags);
        drv_end(&t, r, r == CUDA_SUCCESS ? *handle : 0, 0);
    }
    track_guard_leave();
    return r;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    CUresult (*fn)(CUmemGenericAllocationHandle) = DRV_FN(cuMemRelease);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!handle || !track_guard_enter())
        return fn(handle);
    track_release_handle(handle);
    CUresult r = fn(handle);
    track_guard_leave();
    return r;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags)
{
    CUresult (*fn)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long) =
        DRV_FN(cuMemMap);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!track_guard_enter())
        return fn(ptr, size, offset, handle, flags);
    CUresult r = fn(ptr, size, offset, handle, flags);
    if (r == CUDA_SUCCESS)
        track_map(intercept_driver_current_device(), ptr, size, handle);
    track_guard_leave();
    return r;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    CUresult (*fn)(CUdeviceptr, size_t) = DRV_FN(cuMemUnmap);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!track_guard_enter())
        return fn(ptr, size);
    track_unmap(intercept_driver_current_device(), ptr, size);
    CUresult r = fn(ptr, size);
    track_guard_leave();
    return r;
}

/* --- memory info ----------------------------------------------------------------------------- */

CUresult cuMemGetInfo_v2(size_t *free, size_t *total)
{
    CUresult (*fn)(size_t *, size_t *) = DRV_FN(cuMemGetInfo_v2);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!track_guard_enter())
        return fn(free, total);
    CUresult r = fn(free, total);
    if (r == CUDA_SUCCESS)
        intercept_mem_info(intercept_driver_current_device(), free, total);
    track_guard_leave();
    return r;
}

CUresult cuMemGetInfo_v1(unsigned int *free, unsigned int *total)
{
    CUresult (*fn)(unsigned int *, unsigned int *) = DRV_FN(cuMemGetInfo_v1);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!track_guard_enter())
        return fn(free, total);
    CUresult r = fn(free, total);
    if (r == CUDA_SUCCESS) {
        size_t f = free ? *free : 0, t = total ? *total : 0;
        intercept_mem_info(intercept_driver_current_device(), &f, &t);
        if (free)
            *free = f > UINT_MAX ? UINT_MAX : (unsigned int)f;
        if (total)
            *total = t > UINT_MAX ? UINT_MAX : (unsigned int)t;
    }
    track_guard_leave();
    return r;
}
