/* pointer: cuPointerGetAttribute(s), answered from the mapping table. */
#include "context.h"
#include "export.h"
#include "mapping.h"
#include "vmm.h"

#include <string.h>
#include <sys/mman.h>

/* What is known about the memory at one address. found is false for host memory. */
struct pointer_info {
    bool found;
    struct mapping m;
    bool host_located;
    CUmemAllocationHandleType handle_types;
};

static struct pointer_info lookup(uint64_t ptr)
{
    struct pointer_info info = {0};
    mapping_lock();
    struct mapping *m = mapping_find(ptr);
    if (m && ptr - m->base < m->size) {
        info.found = true;
        info.m = *m;
        if (m->kind == MAPPING_VMM) {
            info.host_located = vmm_handle_is_host(m->handle);
            info.handle_types = vmm_handle_types(m->handle);
        }
        if (m->kind == MAPPING_PINNED || m->kind == MAPPING_HOST_REGISTERED)
            info.host_located = true;
    }
    mapping_unlock();
    return info;
}

static unsigned access_flags(int prot)
{
    if (prot & PROT_WRITE)
        return CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE;
    return prot & PROT_READ ? CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READ
                            : CU_POINTER_ATTRIBUTE_ACCESS_FLAG_NONE;
}

static CUresult put_u64(void *data, uint64_t v)
{
    memcpy(data, &v, sizeof(v));
    return CUDA_SUCCESS;
}

static CUresult put_int(void *data, int v)
{
    memcpy(data, &v, sizeof(v));
    return CUDA_SUCCESS;
}

static CUresult put_ptr(void *data, const void *v)
{
    memcpy(data, &v, sizeof(v));
    return CUDA_SUCCESS;
}

/* Host-located VMM memory reports HOST, as a GPU driver does (open-mpi/ompi#12751). */
static CUresult put_attr(const struct pointer_info *in, uint64_t ptr, CUpointer_attribute attr,
                         void *data)
{
    const struct mapping *m = &in->m;
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        return put_ptr(data, m->kind == MAPPING_VMM ? NULL : ctx_current());
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        return put_int(data, in->host_located ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE);
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        if (attr == CU_POINTER_ATTRIBUTE_HOST_POINTER && m->kind != MAPPING_MANAGED &&
            m->kind != MAPPING_PINNED && m->kind != MAPPING_HOST_REGISTERED)
            return CUDA_ERROR_INVALID_VALUE;
        return put_u64(data, ptr);
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
    case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE:
        return put_int(data, 0);
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
        return put_u64(data, m->id);
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        return put_int(data, m->kind == MAPPING_MANAGED);
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        return put_int(data, 0);
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
        return put_int(data, m->kind == MAPPING_ALLOC && !m->pool);
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
        return put_u64(data, m->base);
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
        return put_u64(data, m->size);
    case CU_POINTER_ATTRIBUTE_MAPPED:
        return put_int(data, 1);
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
        return put_u64(data, in->handle_types);
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
        return put_int(data, (int)access_flags(m->prot));
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        return put_ptr(data, m->pool);
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

SIMCU_EXPORT CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute,
                                            CUdeviceptr ptr)
{
    CUresult rc = ctx_require();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!data)
        return CUDA_ERROR_INVALID_VALUE;
    struct pointer_info info = lookup(ptr);
    if (!info.found)
        return CUDA_ERROR_INVALID_VALUE; /* not device memory: unregistered host memory */
    return put_attr(&info, ptr, attribute, data);
}

/* The value an attribute has for memory the driver does not know (pageable host memory). */
static CUresult put_unknown(CUpointer_attribute attr, void *data)
{
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        return put_ptr(data, NULL);
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
        return put_u64(data, 0);
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        return put_int(data, -2); /* what the real driver reports for host memory */
    default:
        return put_int(data, 0);
    }
}

SIMCU_EXPORT CUresult cuPointerGetAttributes(unsigned int numAttributes,
                                             CUpointer_attribute *attributes, void **data,
                                             CUdeviceptr ptr)
{
    CUresult rc = ctx_require();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (numAttributes == 0 || !attributes || !data)
        return CUDA_ERROR_INVALID_VALUE;
    struct pointer_info info = lookup(ptr);
    for (unsigned i = 0; i < numAttributes && rc == CUDA_SUCCESS; i++) {
        if (!data[i])
            return CUDA_ERROR_INVALID_VALUE;
        if (!info.found)
            rc = put_unknown(attributes[i], data[i]);
        else if (put_attr(&info, ptr, attributes[i], data[i]) != CUDA_SUCCESS)
            rc = put_unknown(attributes[i], data[i]);
    }
    return rc;
}
