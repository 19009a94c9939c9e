/* hostmem: page-locked host memory (cuMemHostAlloc, cuMemHostRegister). It lives outside
 * the device address range, so copies treat it as host memory, and pointer queries report
 * CU_MEMORYTYPE_HOST for it. It is not counted against the device capacity. */
#include "context.h"
#include "export.h"
#include "mapping.h"

#include <stdlib.h>
#include <sys/mman.h>

#define PAGE 4096ull

static uint64_t page_round(uint64_t n)
{
    return (n + PAGE - 1) / PAGE * PAGE;
}

static CUresult host_alloc(void **pp, size_t bytesize, unsigned int flags)
{
    CUresult rc = ctx_require();
    if (rc != CUDA_SUCCESS)
        return rc;
    const unsigned known =
        CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
    if (!pp || bytesize == 0 || (flags & ~known))
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t span = page_round(bytesize);
    void *p = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct mapping m = {.base = (uint64_t)p,
                        .size = bytesize,
                        .span = span,
                        .kind = MAPPING_PINNED,
                        .prot = PROT_READ | PROT_WRITE};
    mapping_lock();
    bool ok = mapping_insert(&m);
    mapping_unlock();
    if (!ok) {
        munmap(p, span);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *pp = p;
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    return host_alloc(pp, bytesize, Flags);
}

SIMCU_EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    return host_alloc(pp, bytesize, 0);
}

/* Removes the host mapping that starts at p and has the given kind. */
static bool take_host(void *p, enum mapping_kind kind, struct mapping *out)
{
    mapping_lock();
    struct mapping *m = mapping_find((uint64_t)p);
    bool ok = m && m->base == (uint64_t)p && m->kind == kind;
    if (ok)
        mapping_remove(m->base, out);
    mapping_unlock();
    return ok;
}

SIMCU_EXPORT CUresult cuMemFreeHost(void *p)
{
    CUresult rc = ctx_require();
    if (rc != CUDA_SUCCESS)
        return rc;
    struct mapping m;
    if (!take_host(p, MAPPING_PINNED, &m))
        return CUDA_ERROR_INVALID_VALUE;
    munmap(p, m.span);
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
    CUresult rc = ctx_require();
    if (rc != CUDA_SUCCESS)
        return rc;
    (void)Flags;
    if (!p || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct mapping m = {.base = (uint64_t)p,
                        .size = bytesize,
                        .span = bytesize,
                        .kind = MAPPING_HOST_REGISTERED,
                        .prot = PROT_READ | PROT_WRITE};
    mapping_lock();
    if (mapping_overlaps(m.base, m.size))
        rc = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    else if (!mapping_insert(&m))
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    mapping_unlock();
    return rc;
}

SIMCU_EXPORT CUresult cuMemHostUnregister(void *p)
{
    CUresult rc = ctx_require();
    if (rc != CUDA_SUCCESS)
        return rc;
    struct mapping m;
    return take_host(p, MAPPING_HOST_REGISTERED, &m) ? CUDA_SUCCESS
                                                     : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}

/* Unified addressing: the device address of page-locked memory is its host address. */
SIMCU_EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
    CUresult rc = ctx_require();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!pdptr || Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    mapping_lock();
    struct mapping *m = mapping_find((uint64_t)p);
    bool ok = m && (m->kind == MAPPING_PINNED || m->kind == MAPPING_HOST_REGISTERED);
    mapping_unlock();
    if (!ok)
        return CUDA_ERROR_INVALID_VALUE;
    *pdptr = (CUdeviceptr)p;
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuMemHostGetFlags(unsigned int *pFlags, void *p)
{
    CUresult rc = ctx_require();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!pFlags)
        return CUDA_ERROR_INVALID_VALUE;
    mapping_lock();
    struct mapping *m = mapping_find((uint64_t)p);
    bool ok = m && (m->kind == MAPPING_PINNED || m->kind == MAPPING_HOST_REGISTERED);
    mapping_unlock();
    if (!ok)
        return CUDA_ERROR_INVALID_VALUE;
    *pFlags = CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE;
    return CUDA_SUCCESS;
}
