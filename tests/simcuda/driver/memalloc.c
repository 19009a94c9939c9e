#include "memalloc.h"

#include "context.h"
#include "export.h"
#include "mempool.h"
#include "stats.h"
#include "vaspace.h"

#include <sys/mman.h>

static uint64_t round_up(uint64_t n, uint64_t unit)
{
    return (n + unit - 1) / unit * unit;
}

CUresult memalloc_alloc(uint64_t size, uint64_t charge, enum mapping_kind kind, CUmemoryPool pool,
                        CUdeviceptr *out)
{
    if (!stats_charge(STATS_DEVICE, charge))
        return CUDA_ERROR_OUT_OF_MEMORY;
    uint64_t span = round_up(size, VASPACE_PAGE);
    uint64_t addr = span < size ? 0 : vaspace_alloc(span, VASPACE_PAGE);
    if (!addr) {
        stats_refund(STATS_DEVICE, charge);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    struct mapping m = {.base = addr,
                        .size = size,
                        .span = span,
                        .charged = charge,
                        .kind = kind,
                        .prot = PROT_READ | PROT_WRITE,
                        .pool = pool};
    mapping_lock();
    bool ok = vaspace_map_anon(addr, span) && mapping_insert(&m);
    mapping_unlock();
    if (!ok) {
        vaspace_unmap(addr, span);
        vaspace_release(addr, span);
        stats_refund(STATS_DEVICE, charge);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *out = addr;
    return CUDA_SUCCESS;
}

CUresult memalloc_free(CUdeviceptr ptr)
{
    struct mapping m;
    mapping_lock();
    struct mapping *found = mapping_find(ptr);
    bool ok = found && found->base == ptr &&
              (found->kind == MAPPING_ALLOC || found->kind == MAPPING_MANAGED);
    if (ok) {
        mapping_remove(ptr, &m);
        /* Unmap before the lock is dropped, so no new allocation can get the range while
         * it is still accessible. */
        vaspace_unmap(m.base, m.span);
    }
    mapping_unlock();
    if (!ok)
        return CUDA_ERROR_INVALID_VALUE;
    vaspace_release(m.base, m.span);
    stats_uncharge(STATS_DEVICE, m.charged);
    if (m.pool)
        mempool_note_free(m.pool, m.charged);
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    CUresult rc = ctx_require();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!dptr || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    return memalloc_alloc(bytesize, round_up(bytesize, MEMALLOC_UNIT), MAPPING_ALLOC, NULL, dptr);
}

SIMCU_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    CUresult rc = ctx_require();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (dptr == 0)
        return CUDA_SUCCESS;
    return memalloc_free(dptr);
}

/* Rows are padded to the device's texture alignment, as cuMemAllocPitch does on a GPU. */
#define PITCH_ALIGN 512ull

SIMCU_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                         size_t Height, unsigned int ElementSizeBytes)
{
    CUresult rc = ctx_require();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!dptr || !pPitch || WidthInBytes == 0 || Height == 0 ||
        (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t pitch = round_up(WidthInBytes, PITCH_ALIGN);
    if (Height > UINT64_MAX / pitch)
        return CUDA_ERROR_OUT_OF_MEMORY;
    uint64_t bytes = pitch * Height;
    rc = memalloc_alloc(bytes, bytes, MAPPING_ALLOC, NULL, dptr);
    if (rc == CUDA_SUCCESS)
        *pPitch = pitch;
    return rc;
}

SIMCU_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    CUresult rc = ctx_require();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!dptr || bytesize == 0 || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
        return CUDA_ERROR_INVALID_VALUE;
    return memalloc_alloc(bytesize, round_up(bytesize, MEMALLOC_UNIT), MAPPING_MANAGED, NULL, dptr);
}

SIMCU_EXPORT CUresult cuMemGetInfo_v2(size_t *free, size_t *total)
{
    CUresult rc = ctx_require();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!free || !total)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t cap = stats_capacity(), used = stats_used(STATS_DEVICE);
    *total = cap;
    *free = used < cap ? cap - used : 0;
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    CUresult rc = ctx_require();
    if (rc != CUDA_SUCCESS)
        return rc;
    mapping_lock();
    struct mapping *m = mapping_find(dptr);
    if (m && dptr - m->base < m->size) {
        if (pbase)
            *pbase = m->base;
        if (psize)
            *psize = m->size;
    } else {
        rc = CUDA_ERROR_NOT_FOUND;
    }
    mapping_unlock();
    return rc;
}
