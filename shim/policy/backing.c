/* backing: see backing.h. The primitives call the real driver table only: the shim's own maps
 * and copies must never be seen (or charged) by its hooks. */
#include "backing.h"

#include "compat.h"
#include "real.h"

#include <stdatomic.h>
#include <string.h>

struct backing_dev {
    _Atomic int state; /* 0 unknown, 1 ready, -1 failed */
    uint64_t granularity;
    int host_vmm;
};

static struct backing_dev backing_devs[MS_MAX_DEVICES];

static struct backing_dev *dev_of(int device)
{
    return device >= 0 && device < MS_MAX_DEVICES ? &backing_devs[device] : NULL;
}

static CUmemAllocationProp prop_for(int device, int host)
{
    CUmemAllocationProp p;
    memset(&p, 0, sizeof p);
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = host ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = host ? 0 : device;
    return p;
}

int backing_ensure_context(int device)
{
    CUresult (*get)(CUcontext *) = REAL(cuCtxGetCurrent);
    CUresult (*set)(CUcontext) = REAL(cuCtxSetCurrent);
    CUresult (*retain)(CUcontext *, CUdevice) = REAL(cuDevicePrimaryCtxRetain);
    CUresult (*dget)(CUdevice *, int) = REAL(cuDeviceGet);
    CUresult (*init)(unsigned int) = REAL(cuInit);
    if (!get || !set || !retain || !dget)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUcontext ctx = NULL;
    CUresult r = get(&ctx);
    if (r == CUDA_ERROR_NOT_INITIALIZED && init) {
        init(0);
        r = get(&ctx);
    }
    if (r == CUDA_SUCCESS && ctx)
        return 0;
    /* What the runtime does on a thread's first call: the device's primary context. */
    CUdevice dev;
    if ((r = dget(&dev, device)) != CUDA_SUCCESS || (r = retain(&ctx, dev)) != CUDA_SUCCESS)
        return (int)r;
    return (int)set(ctx);
}

int backing_device_init(int device)
{
    struct backing_dev *d = dev_of(device);
    if (!d)
        return CUDA_ERROR_INVALID_DEVICE;
    int s = atomic_load(&d->state);
    if (s != 0)
        return s > 0 ? 0 : CUDA_ERROR_NOT_SUPPORTED;
    CUresult (*gran)(size_t *, const CUmemAllocationProp *, CUmemAllocationGranularity_flags) =
        REAL(cuMemGetAllocationGranularity);
    CUresult (*attr)(int *, CUdevice_attribute, CUdevice) = REAL(cuDeviceGetAttribute);
    CUresult (*dget)(CUdevice *, int) = REAL(cuDeviceGet);
    int r = backing_ensure_context(device);
    if (r != 0)
        return r; /* maybe too early (no driver yet): try again next time */
    CUmemAllocationProp p = prop_for(device, 0);
    size_t g = 0;
    int vmm = 0, host = 0;
    CUdevice dev;
    if (!gran || !attr || !dget || !REAL(cuMemCreate) || !REAL(cuMemMap) || !REAL(cuMemUnmap) ||
        !REAL(cuMemRelease) || !REAL(cuMemAddressReserve) || !REAL(cuMemAddressFree) ||
        !REAL(cuMemSetAccess) || dget(&dev, device) != CUDA_SUCCESS ||
        attr(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev) != CUDA_SUCCESS ||
        !vmm || gran(&g, &p, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) != CUDA_SUCCESS || g == 0 ||
        (g & (g - 1)) != 0) {
        atomic_store(&d->state, -1);
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    if (attr(&host, CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev) !=
        CUDA_SUCCESS)
        host = 0;
    if (host) {
        /* Host granules must not be coarser than device ones, or a range could not take either. */
        CUmemAllocationProp hp = prop_for(device, 1);
        size_t hg = 0;
        if (gran(&hg, &hp, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) != CUDA_SUCCESS || hg == 0 ||
            g % hg != 0)
            host = 0;
    }
    d->granularity = g;
    d->host_vmm = host;
    atomic_store(&d->state, 1);
    return 0;
}

uint64_t backing_granularity(int device)
{
    struct backing_dev *d = dev_of(device);
    return d && atomic_load(&d->state) > 0 ? d->granularity : 0;
}

int backing_host_vmm(int device)
{
    struct backing_dev *d = dev_of(device);
    return d && atomic_load(&d->state) > 0 ? d->host_vmm : 0;
}

int backing_reserve(uint64_t size, uint64_t *va)
{
    CUresult (*fn)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long) =
        REAL(cuMemAddressReserve);
    CUdeviceptr p = 0;
    CUresult r = fn ? fn(&p, size, 0, 0, 0) : CUDA_ERROR_NOT_INITIALIZED;
    *va = r == CUDA_SUCCESS ? p : 0;
    return (int)r;
}

void backing_unreserve(uint64_t va, uint64_t size)
{
    CUresult (*fn)(CUdeviceptr, size_t) = REAL(cuMemAddressFree);
    if (fn && va)
        fn(va, size);
}

int backing_map_handle(int device, uint64_t va, uint64_t size, uint64_t handle)
{
    CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long) =
        REAL(cuMemMap);
    CUresult (*unmap)(CUdeviceptr, size_t) = REAL(cuMemUnmap);
    CUresult (*access)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t) = REAL(cuMemSetAccess);
    if (!map || !unmap || !access)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = map(va, size, 0, handle, 0);
    if (r != CUDA_SUCCESS)
        return (int)r;
    CUmemAccessDesc a;
    memset(&a, 0, sizeof a);
    a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    a.location.id = device;
    a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    if ((r = access(va, size, &a, 1)) != CUDA_SUCCESS) {
        unmap(va, size);
        return (int)r;
    }
    return 0;
}

int backing_map(int device, int host, uint64_t va, uint64_t size, uint64_t *handle)
{
    CUresult (*create)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                       unsigned long long) = REAL(cuMemCreate);
    CUresult (*release)(CUmemGenericAllocationHandle) = REAL(cuMemRelease);
    if (!create || !release)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUmemAllocationProp p = prop_for(device, host);
    CUmemGenericAllocationHandle h = 0;
    CUresult r = create(&h, size, &p, 0);
    if (r != CUDA_SUCCESS)
        return (int)r;
    int m = backing_map_handle(device, va, size, h);
    if (m != 0) {
        release(h);
        return m;
    }
    *handle = h;
    return 0;
}

void backing_unmap(uint64_t va, uint64_t size, uint64_t handle)
{
    /* handle 0: unmap only, the caller keeps (and maps again) its handle. */
    CUresult (*unmap)(CUdeviceptr, size_t) = REAL(cuMemUnmap);
    CUresult (*release)(CUmemGenericAllocationHandle) = REAL(cuMemRelease);
    if (unmap)
        unmap(va, size);
    if (release && handle)
        release(handle);
}

int backing_copy_dtod(uint64_t dst, uint64_t src, uint64_t size)
{
    CUresult (*fn)(CUdeviceptr, CUdeviceptr, size_t) = REAL(cuMemcpyDtoD_v2);
    return fn ? (int)fn(dst, src, size) : CUDA_ERROR_NOT_INITIALIZED;
}

int backing_copy_dtoh(void *dst, uint64_t src, uint64_t size)
{
    CUresult (*fn)(void *, CUdeviceptr, size_t) = REAL(cuMemcpyDtoH_v2);
    return fn ? (int)fn(dst, src, size) : CUDA_ERROR_NOT_INITIALIZED;
}

int backing_copy_htod(uint64_t dst, const void *src, uint64_t size)
{
    CUresult (*fn)(CUdeviceptr, const void *, size_t) = REAL(cuMemcpyHtoD_v2);
    return fn ? (int)fn(dst, src, size) : CUDA_ERROR_NOT_INITIALIZED;
}

int backing_sync(void)
{
    CUresult (*fn)(void) = REAL(cuCtxSynchronize);
    return fn ? (int)fn() : CUDA_ERROR_NOT_INITIALIZED;
}

/* ---- the sub-allocator: a buddy system (buddy.h) per chunk ---- */

void backing_chunk_init(struct backing_chunk *c, uint64_t base, uint64_t bytes)
{
    memset(c, 0, sizeof *c);
    c->base = base;
    c->bytes = bytes;
    c->unit = buddy_unit(bytes);
    buddy_init(&c->buddy, c->bits, (uint32_t)(bytes / c->unit));
}

uint64_t backing_chunk_take(struct backing_chunk *c, uint64_t size)
{
    unsigned k = 0;
    while (k < c->buddy.orders && (c->unit << k) < size)
        k++;
    if (k >= c->buddy.orders || (c->unit << k) != size)
        return 0;
    int64_t at = buddy_take(&c->buddy, k);
    if (at < 0)
        return 0;
    c->order_of[at] = (uint8_t)(k + 1);
    c->used += size;
    return c->base + (uint64_t)at * c->unit;
}

uint64_t backing_chunk_give(struct backing_chunk *c, uint64_t addr)
{
    if (addr < c->base || addr >= c->base + c->bytes || (addr - c->base) % c->unit)
        return 0;
    uint64_t u = (addr - c->base) / c->unit;
    uint8_t ko = c->order_of[u];
    if (ko == 0)
        return 0;
    c->order_of[u] = 0;
    c->tag_of[u] = 0;
    unsigned k = (unsigned)ko - 1;
    uint64_t size = c->unit << k;
    c->used -= size;
    buddy_give(&c->buddy, (uint32_t)u, k);
    return size;
}

/* Unit index of the allocated block at addr, or -1. */
static int64_t block_at(const struct backing_chunk *c, uint64_t addr)
{
    if (addr < c->base || addr >= c->base + c->bytes || (addr - c->base) % c->unit)
        return -1;
    uint64_t u = (addr - c->base) / c->unit;
    return c->order_of[u] ? (int64_t)u : -1;
}

int backing_chunk_tag(const struct backing_chunk *c, uint64_t addr)
{
    int64_t u = block_at(c, addr);
    return u < 0 ? -1 : c->tag_of[u];
}

void backing_chunk_set_tag(struct backing_chunk *c, uint64_t addr, uint8_t tag)
{
    int64_t u = block_at(c, addr);
    if (u >= 0)
        c->tag_of[u] = tag;
}

uint64_t backing_chunk_next(const struct backing_chunk *c, uint64_t addr, uint64_t *size)
{
    if (addr < c->base)
        addr = c->base;
    uint64_t n = c->bytes / c->unit;
    /* Rounded up: an address inside a unit starts no block there. */
    for (uint64_t u = (addr - c->base + c->unit - 1) / c->unit; u < n; u++) {
        if (c->order_of[u]) {
            *size = c->unit << (c->order_of[u] - 1);
            return c->base + u * c->unit;
        }
    }
    return 0;
}
