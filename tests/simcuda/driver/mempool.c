#include "mempool.h"

#include "context.h"
#include "device.h"
#include "export.h"
#include "memalloc.h"
#include "stream.h"

#include <pthread.h>
#include <stdlib.h>

#define POOL_MAGIC 0x53494d50u /* "SIMP" */

struct CUmemPoolHandle_st {
    unsigned magic;
    bool destroyed; /* destroyed while allocations were live: freed with the last one */
    CUmemPoolProps props;
    int reuse[3]; /* the three CU_MEMPOOL_ATTR_REUSE_* flags */
    cuuint64_t release_threshold;
    uint64_t used, used_high; /* without caching, reserved memory equals used memory */
    unsigned long long live;
};

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct CUmemPoolHandle_st default_pool = {
    .magic = POOL_MAGIC,
    .props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
              .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}},
    .reuse = {1, 1, 1},
};
static CUmemoryPool current_pool = &default_pool;

static bool pool_valid(CUmemoryPool pool)
{
    return pool && pool->magic == POOL_MAGIC && !pool->destroyed;
}

static uint64_t charge_of(size_t bytes)
{
    return (bytes + MEMALLOC_UNIT - 1) / MEMALLOC_UNIT * MEMALLOC_UNIT;
}

void mempool_note_free(CUmemoryPool pool, uint64_t bytes)
{
    pthread_mutex_lock(&pool_lock);
    pool->used -= bytes;
    bool release = --pool->live == 0 && pool->destroyed;
    pthread_mutex_unlock(&pool_lock);
    if (release) {
        pool->magic = 0;
        free(pool);
    }
}

static CUresult alloc_from(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream s)
{
    CUresult rc = ctx_require();
    if (rc == CUDA_SUCCESS)
        rc = stream_check(s);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!dptr || bytesize == 0 || !pool_valid(pool))
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t charge = charge_of(bytesize);
    rc = memalloc_alloc(bytesize, charge, MAPPING_ALLOC, pool, dptr);
    if (rc != CUDA_SUCCESS)
        return rc;
    pthread_mutex_lock(&pool_lock);
    pool->used += charge;
    pool->live++;
    if (pool->used > pool->used_high)
        pool->used_high = pool->used;
    pthread_mutex_unlock(&pool_lock);
    return CUDA_SUCCESS;
}

static CUmemoryPool pool_now(void)
{
    pthread_mutex_lock(&pool_lock);
    CUmemoryPool pool = current_pool;
    pthread_mutex_unlock(&pool_lock);
    return pool;
}

SIMCU_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    return alloc_from(dptr, bytesize, pool_now(), hStream);
}

SIMCU_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    return alloc_from(dptr, bytesize, pool_now(), hStream);
}

SIMCU_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                              CUstream hStream)
{
    return alloc_from(dptr, bytesize, pool, hStream);
}

SIMCU_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                                                   CUmemoryPool pool, CUstream hStream)
{
    return alloc_from(dptr, bytesize, pool, hStream);
}

static CUresult free_async(CUdeviceptr dptr, CUstream hStream)
{
    CUresult rc = ctx_require();
    if (rc == CUDA_SUCCESS)
        rc = stream_check(hStream);
    if (rc != CUDA_SUCCESS)
        return rc;
    /* Like the real driver, memory from cuMemAlloc may be freed here too. */
    return memalloc_free(dptr);
}

SIMCU_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    return free_async(dptr, hStream);
}

SIMCU_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
    return free_async(dptr, hStream);
}

static CUresult check_pool_location(const CUmemLocation *loc, CUmemAllocationType type)
{
    if (!loc || type != CU_MEM_ALLOCATION_TYPE_PINNED)
        return CUDA_ERROR_INVALID_VALUE;
    if (loc->type == CU_MEM_LOCATION_TYPE_DEVICE)
        return loc->id == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
    /* CU_DEVICE_ATTRIBUTE_HOST_(NUMA_)MEMORY_POOLS_SUPPORTED are 0 here. */
    return CUDA_ERROR_NOT_SUPPORTED;
}

SIMCU_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
    CUresult rc = device_check(dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!pool_out)
        return CUDA_ERROR_INVALID_VALUE;
    *pool_out = &default_pool;
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
    CUresult rc = device_check(dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    *pool = pool_now();
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
    CUresult rc = device_check(dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!pool_valid(pool))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&pool_lock);
    current_pool = pool;
    pthread_mutex_unlock(&pool_lock);
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuMemGetDefaultMemPool(CUmemoryPool *pool_out, CUmemLocation *location,
                                             CUmemAllocationType type)
{
    CUresult rc = device_check_init();
    if (rc == CUDA_SUCCESS)
        rc = check_pool_location(location, type);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!pool_out)
        return CUDA_ERROR_INVALID_VALUE;
    *pool_out = &default_pool;
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuMemGetMemPool(CUmemoryPool *pool_out, CUmemLocation *location,
                                      CUmemAllocationType type)
{
    CUresult rc = device_check_init();
    if (rc == CUDA_SUCCESS)
        rc = check_pool_location(location, type);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!pool_out)
        return CUDA_ERROR_INVALID_VALUE;
    *pool_out = pool_now();
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuMemSetMemPool(CUmemLocation *location, CUmemAllocationType type,
                                      CUmemoryPool pool)
{
    CUresult rc = device_check_init();
    if (rc == CUDA_SUCCESS)
        rc = check_pool_location(location, type);
    if (rc != CUDA_SUCCESS)
        return rc;
    return cuDeviceSetMemPool(0, pool);
}

SIMCU_EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
    CUresult rc = device_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!pool || !poolProps)
        return CUDA_ERROR_INVALID_VALUE;
    rc = check_pool_location(&poolProps->location, poolProps->allocType);
    if (rc != CUDA_SUCCESS)
        return rc;
    struct CUmemPoolHandle_st *p = calloc(1, sizeof(*p));
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *p = (struct CUmemPoolHandle_st){.magic = POOL_MAGIC, .props = *poolProps, .reuse = {1, 1, 1}};
    *pool = p;
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    CUresult rc = device_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!pool_valid(pool) || pool == &default_pool)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&pool_lock);
    if (current_pool == pool)
        current_pool = &default_pool;
    pool->destroyed = true;
    bool release = pool->live == 0;
    pthread_mutex_unlock(&pool_lock);
    if (release) {
        pool->magic = 0;
        free(pool);
    }
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
    (void)minBytesToKeep; /* nothing is cached, so there is nothing to trim */
    CUresult rc = device_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    return pool_valid(pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUresult set_attr(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        pool->reuse[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES] = *(int *)value != 0;
        return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
        pool->release_threshold = *(cuuint64_t *)value;
        return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
        /* The high-water marks may only be reset, to the current value. */
        if (*(cuuint64_t *)value != 0)
            return CUDA_ERROR_INVALID_VALUE;
        pool->used_high = pool->used;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

static CUresult get_attr(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        *(int *)value = pool->reuse[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES];
        return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
        *(cuuint64_t *)value = pool->release_threshold;
        return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
        *(cuuint64_t *)value = pool->used;
        return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
        *(cuuint64_t *)value = pool->used_high;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

SIMCU_EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr,
                                            void *value)
{
    CUresult rc = device_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!pool_valid(pool) || !value)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&pool_lock);
    rc = set_attr(pool, attr, value);
    pthread_mutex_unlock(&pool_lock);
    return rc;
}

SIMCU_EXPORT CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr,
                                            void *value)
{
    CUresult rc = device_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!pool_valid(pool) || !value)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&pool_lock);
    rc = get_attr(pool, attr, value);
    pthread_mutex_unlock(&pool_lock);
    return rc;
}
