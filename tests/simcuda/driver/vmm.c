#include "vmm.h"

#include "device.h"
#include "export.h"
#include "mapping.h"
#include "physmem.h"
#include "stats.h"
#include "vaspace.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <uthash.h>

/* Handles and reservations are guarded by the mapping lock, like the mappings they feed. */
struct vmm_handle {
    unsigned long long id;
    uint64_t offset, size; /* range of the physical-memory file */
    CUmemAllocationProp prop;
    enum stats_place place;
    int refs;     /* cuMemCreate and each cuMemRetainAllocationHandle; cuMemRelease drops one */
    int mappings; /* live cuMemMap of this handle */
    UT_hash_handle hh;
};

struct reservation {
    uint64_t base, size;
    struct reservation *next;
};

static struct vmm_handle *handles;
static struct reservation *reservations;
static unsigned long long next_handle = 0x5100;

bool vmm_handle_is_host(const struct vmm_handle *h)
{
    return h->place == STATS_HOST;
}

CUmemAllocationHandleType vmm_handle_types(const struct vmm_handle *h)
{
    return h->prop.requestedHandleTypes;
}

static bool aligned(uint64_t v)
{
    return v % DEVICE_GRANULARITY == 0;
}

static struct vmm_handle *handle_find(CUmemGenericAllocationHandle id)
{
    struct vmm_handle *h;
    unsigned long long key = id;
    HASH_FIND(hh, handles, &key, sizeof(key), h);
    return h && h->refs > 0 ? h : NULL;
}

/* Frees the physical memory once no reference and no mapping is left. */
static void handle_settle(struct vmm_handle *h)
{
    if (h->refs > 0 || h->mappings > 0)
        return;
    HASH_DELETE(hh, handles, h);
    physmem_free(h->offset, h->size);
    stats_uncharge(h->place, h->size);
    free(h);
}

SIMCU_EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                                          CUdeviceptr addr, unsigned long long flags)
{
    CUresult rc = device_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    (void)flags; /* only placement hints exist; a hint changes nothing here */
    if (!ptr || size == 0 || !aligned(size) || (alignment & (alignment - 1)))
        return CUDA_ERROR_INVALID_VALUE;
    if (alignment < DEVICE_GRANULARITY)
        alignment = DEVICE_GRANULARITY;
    struct reservation *r = malloc(sizeof(*r));
    if (!r)
        return CUDA_ERROR_OUT_OF_MEMORY;
    /* addr is a hint: honoured when that range is free, else ignored as on a GPU. */
    uint64_t base = 0;
    if (addr && addr % alignment == 0 && vaspace_contains(addr, size) && vaspace_take(addr, size))
        base = addr;
    if (!base)
        base = vaspace_alloc(size, alignment);
    if (!base) {
        free(r);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    mapping_lock();
    *r = (struct reservation){.base = base, .size = size, .next = reservations};
    reservations = r;
    mapping_unlock();
    *ptr = base;
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    CUresult rc = device_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    mapping_lock();
    struct reservation **at = &reservations;
    while (*at && !((*at)->base == ptr && (*at)->size == size))
        at = &(*at)->next;
    struct reservation *r = *at;
    if (!r || mapping_overlaps(ptr, size))
        rc = CUDA_ERROR_INVALID_VALUE; /* unknown, or still mapped */
    else
        *at = r->next;
    mapping_unlock();
    if (rc == CUDA_SUCCESS) {
        vaspace_release(r->base, r->size);
        free(r);
    }
    return rc;
}

static bool in_reservation(uint64_t addr, uint64_t size)
{
    for (struct reservation *r = reservations; r; r = r->next)
        if (addr >= r->base && addr - r->base <= r->size && size <= r->base + r->size - addr)
            return true;
    return false;
}

/* Where prop puts memory, or an error for a location this device does not offer. */
static CUresult location_place(const CUmemLocation *loc, enum stats_place *place)
{
    switch (loc->type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
        *place = STATS_DEVICE;
        return loc->id == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
        *place = STATS_HOST;
        if (loc->type == CU_MEM_LOCATION_TYPE_HOST_NUMA && loc->id != 0)
            return CUDA_ERROR_INVALID_VALUE; /* the one NUMA node is 0 */
        return device_host_vmm() ? CUDA_SUCCESS : CUDA_ERROR_NOT_SUPPORTED;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

static CUresult check_prop(const CUmemAllocationProp *prop, enum stats_place *place)
{
    if (!prop)
        return CUDA_ERROR_INVALID_VALUE;
    if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED)
        return prop->type == CU_MEM_ALLOCATION_TYPE_MANAGED ? CUDA_ERROR_NOT_SUPPORTED
                                                            : CUDA_ERROR_INVALID_VALUE;
    CUresult rc = location_place(&prop->location, place);
    if (rc != CUDA_SUCCESS)
        return rc;
    /* Host memory without a NUMA node is "not IPC capable" (cuda.h, cuMemCreate). */
    if (prop->location.type == CU_MEM_LOCATION_TYPE_HOST && prop->requestedHandleTypes)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuMemGetAllocationGranularity(size_t *granularity,
                                                    const CUmemAllocationProp *prop,
                                                    CUmemAllocationGranularity_flags option)
{
    CUresult rc = device_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    enum stats_place place;
    if (!granularity || (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
                         option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
        return CUDA_ERROR_INVALID_VALUE;
    rc = check_prop(prop, &place);
    if (rc != CUDA_SUCCESS)
        return rc;
    *granularity = DEVICE_GRANULARITY;
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                                  const CUmemAllocationProp *prop, unsigned long long flags)
{
    CUresult rc = device_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    enum stats_place place;
    if (!handle || size == 0 || !aligned(size) || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    rc = check_prop(prop, &place);
    if (rc != CUDA_SUCCESS)
        return rc;
    struct vmm_handle *h = calloc(1, sizeof(*h));
    if (!h)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (!stats_charge(place, size)) {
        free(h);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (!physmem_alloc(size, &h->offset)) {
        stats_refund(place, size);
        free(h);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    h->size = size;
    h->prop = *prop;
    h->place = place;
    h->refs = 1;
    mapping_lock();
    h->id = next_handle++;
    HASH_ADD(hh, handles, id, sizeof(h->id), h);
    mapping_unlock();
    *handle = h->id;
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    CUresult rc = device_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    mapping_lock();
    struct vmm_handle *h = handle_find(handle);
    if (h) {
        h->refs--;
        handle_settle(h);
    }
    mapping_unlock();
    return h ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUresult map_locked(CUdeviceptr ptr, size_t size, size_t offset,
                           CUmemGenericAllocationHandle handle)
{
    struct vmm_handle *h = handle_find(handle);
    if (!h || !aligned(ptr) || !aligned(size) || size == 0 || offset != 0 || size > h->size)
        return CUDA_ERROR_INVALID_VALUE;
    if (!in_reservation(ptr, size) || mapping_overlaps(ptr, size))
        return CUDA_ERROR_INVALID_VALUE;
    struct mapping m = {.base = ptr,
                        .size = size,
                        .span = size,
                        .kind = MAPPING_VMM,
                        .prot = PROT_NONE,
                        .handle = h};
    if (!vaspace_map_file(ptr, size, physmem_fd(), h->offset))
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (!mapping_insert(&m)) {
        vaspace_unmap(ptr, size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    h->mappings++;
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                               CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    CUresult rc = device_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    mapping_lock();
    rc = map_locked(ptr, size, offset, handle);
    mapping_unlock();
    return rc;
}

/* Whether [ptr, ptr + size) is exactly a run of whole, adjacent VMM mappings. */
static bool whole_vmm_mappings(uint64_t ptr, uint64_t size)
{
    uint64_t end = ptr + size;
    if (size == 0 || end < ptr)
        return false;
    for (uint64_t at = ptr; at < end;) {
        struct mapping *m = mapping_find(at);
        if (!m || m->kind != MAPPING_VMM || m->base != at || m->base + m->size > end)
            return false;
        at = m->base + m->size;
    }
    return true;
}

SIMCU_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    CUresult rc = device_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    mapping_lock();
    if (!whole_vmm_mappings(ptr, size)) {
        mapping_unlock();
        return CUDA_ERROR_INVALID_VALUE;
    }
    for (uint64_t at = ptr; at < ptr + size;) {
        struct mapping m;
        mapping_remove(at, &m);
        vaspace_unmap(m.base, m.size);
        m.handle->mappings--;
        handle_settle(m.handle);
        at = m.base + m.size;
    }
    mapping_unlock();
    return CUDA_SUCCESS;
}

static int prot_of(CUmemAccess_flags flags)
{
    switch (flags) {
    case CU_MEM_ACCESS_FLAGS_PROT_READ:
        return PROT_READ;
    case CU_MEM_ACCESS_FLAGS_PROT_READWRITE:
        return PROT_READ | PROT_WRITE;
    case CU_MEM_ACCESS_FLAGS_PROT_NONE:
        return PROT_NONE;
    default:
        return -1;
    }
}

/* Device and CPU share one address here, so the widest access granted to any valid
 * location becomes the protection of the pages. */
static CUresult access_prot(const CUmemAccessDesc *desc, size_t count, int *prot)
{
    *prot = PROT_NONE;
    for (size_t i = 0; i < count; i++) {
        enum stats_place place;
        CUresult rc = location_place(&desc[i].location, &place);
        int p = prot_of(desc[i].flags);
        if (rc != CUDA_SUCCESS)
            return rc;
        if (p < 0)
            return CUDA_ERROR_INVALID_VALUE;
        *prot |= p;
    }
    return CUDA_SUCCESS;
}

/* HOST_NUMA access may be granted only to HOST_NUMA allocations (cuda.h, cuMemSetAccess). */
static bool numa_access_fits(uint64_t ptr, uint64_t size, const CUmemAccessDesc *desc, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        if (desc[i].location.type != CU_MEM_LOCATION_TYPE_HOST_NUMA)
            continue;
        for (uint64_t at = ptr; at < ptr + size;) {
            struct mapping *m = mapping_find(at);
            if (m->handle->prop.location.type != CU_MEM_LOCATION_TYPE_HOST_NUMA)
                return false;
            at = m->base + m->size;
        }
    }
    return true;
}

SIMCU_EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
                                     size_t count)
{
    CUresult rc = device_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    int prot;
    if (!desc || count == 0)
        return CUDA_ERROR_INVALID_VALUE;
    rc = access_prot(desc, count, &prot);
    if (rc != CUDA_SUCCESS)
        return rc;
    mapping_lock();
    if (!whole_vmm_mappings(ptr, size) || !numa_access_fits(ptr, size, desc, count)) {
        rc = CUDA_ERROR_INVALID_VALUE;
    } else if (!vaspace_protect(ptr, size, prot)) {
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        for (uint64_t at = ptr; at < ptr + size;) {
            struct mapping *m = mapping_find(at);
            m->prot = prot;
            at = m->base + m->size;
        }
    }
    mapping_unlock();
    return rc;
}

static CUmemAccess_flags access_of(int prot)
{
    if (prot & PROT_WRITE)
        return CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return prot & PROT_READ ? CU_MEM_ACCESS_FLAGS_PROT_READ : CU_MEM_ACCESS_FLAGS_PROT_NONE;
}

SIMCU_EXPORT CUresult cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location,
                                     CUdeviceptr ptr)
{
    CUresult rc = device_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    enum stats_place place;
    if (!flags || !location)
        return CUDA_ERROR_INVALID_VALUE;
    rc = location_place(location, &place);
    if (rc != CUDA_SUCCESS)
        return rc;
    mapping_lock();
    struct mapping *m = mapping_find(ptr);
    if (m && m->kind == MAPPING_VMM)
        *flags = access_of(m->prot);
    else
        rc = CUDA_ERROR_INVALID_VALUE;
    mapping_unlock();
    return rc;
}

SIMCU_EXPORT CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
    CUresult rc = device_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!handle)
        return CUDA_ERROR_INVALID_VALUE;
    mapping_lock();
    struct mapping *m = mapping_find((uint64_t)addr);
    if (m && m->kind == MAPPING_VMM) {
        m->handle->refs++;
        *handle = m->handle->id;
    } else {
        rc = CUDA_ERROR_INVALID_VALUE;
    }
    mapping_unlock();
    return rc;
}

SIMCU_EXPORT CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop,
                                                             CUmemGenericAllocationHandle handle)
{
    CUresult rc = device_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!prop)
        return CUDA_ERROR_INVALID_VALUE;
    mapping_lock();
    struct vmm_handle *h = handle_find(handle);
    if (h)
        *prop = h->prop;
    mapping_unlock();
    return h ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Physical memory lives in this process only: no handle can leave it. */
SIMCU_EXPORT CUresult cuMemExportToShareableHandle(void *shareableHandle,
                                                   CUmemGenericAllocationHandle handle,
                                                   CUmemAllocationHandleType handleType,
                                                   unsigned long long flags)
{
    (void)shareableHandle, (void)handle, (void)handleType, (void)flags;
    CUresult rc = device_check_init();
    return rc != CUDA_SUCCESS ? rc : CUDA_ERROR_NOT_SUPPORTED;
}

SIMCU_EXPORT CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle,
                                                     void *osHandle,
                                                     CUmemAllocationHandleType shHandleType)
{
    (void)handle, (void)osHandle, (void)shHandleType;
    CUresult rc = device_check_init();
    return rc != CUDA_SUCCESS ? rc : CUDA_ERROR_NOT_SUPPORTED;
}
