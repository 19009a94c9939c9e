/* intercept_pointer: pointer queries about memory the shim serves itself (residency.h).
 *
 * An allocation the shim maps with the virtual-memory API is not cudaMalloc memory to the
 * driver: its range is the shim's reservation (a whole chunk for a small block), it belongs to
 * no context, and once spilled it is host memory (host-mapped) or no memory at all
 * (unmapped, dropped). A program that asks (cudaPointerGetAttributes, PyTorch's and NCCL's
 * checks, cuMemGetAddressRange for IPC offsets) must get the answers cudaMalloc memory gives,
 * whatever the range's state: device memory of the allocating device, its own base and size.
 * The runtime asks the driver through the entry-point lookup, so these driver hooks answer
 * the runtime's queries too.
 *
 * Attributes the shim does not know are asked of the real driver; where that fails because
 * the range is away, the driver's error is returned. */
#include "intercept_driver.h"

#include <string.h>

#include "registry.h"

#define DRV_FN(name) (real_driver_ready() ? REAL(name) : NULL)

/* The allocation holding ptr when the shim serves it: base and requested size (as cudaMalloc
 * reports its range) and device. 0 for every other pointer. */
struct ptr_owned {
    uint64_t base, size;
    int device;
};

static int ptr_owned(CUdeviceptr ptr, struct ptr_owned *o)
{
    uint64_t rbase, rsize;
    int dev;
    if (!track_owned_range(ptr, &rbase, &rsize, &dev))
        return 0;
    struct registry_entry e;
    if (!registry_containing(REGISTRY_ADDR, ptr, &e))
        return 0; /* a chunk's free block: not an allocation the program holds */
    o->base = e.addr;
    o->size = e.requested ? e.requested : e.size;
    o->device = dev;
    return 1;
}

static CUresult put(void *data, const void *v, size_t n)
{
    memcpy(data, v, n);
    return CUDA_SUCCESS;
}

/* The context cudaMalloc memory would name: the calling thread's, when it is on that device
 * (the runtime allocates in the device's primary context, which is current then). */
static CUcontext ptr_context(int device)
{
    CUresult (*get)(CUcontext *) = REAL(cuCtxGetCurrent);
    CUcontext ctx = NULL;
    if (get && get(&ctx) == CUDA_SUCCESS && ctx && intercept_driver_current_device() == device)
        return ctx;
    return NULL;
}

/* One attribute of an owned pointer. -1: not one the shim answers (ask the driver). */
static int ptr_answer(const struct ptr_owned *o, CUdeviceptr ptr, CUpointer_attribute attr,
                      void *data, CUresult *rc)
{
    int zero = 0, one = 1, type = CU_MEMORYTYPE_DEVICE,
        rw = CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE;
    uint64_t p = ptr;
    void *none = NULL;
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT: {
        CUcontext c = ptr_context(o->device);
        *rc = put(data, &c, sizeof c);
        return 0;
    }
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *rc = put(data, &type, sizeof type);
        return 0;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        *rc = put(data, &p, sizeof p);
        return 0;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER: /* device memory has none */
        *rc = CUDA_ERROR_INVALID_VALUE;
        return 0;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE: /* true: VMM memory is not */
        *rc = put(data, &zero, sizeof zero);
        return 0;
    case CU_POINTER_ATTRIBUTE_MAPPED:
        *rc = put(data, &one, sizeof one);
        return 0;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *rc = put(data, &o->device, sizeof o->device);
        return 0;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *rc = put(data, &o->base, sizeof o->base);
        return 0;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: {
        size_t s = (size_t)o->size;
        *rc = put(data, &s, sizeof s);
        return 0;
    }
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
        *rc = put(data, &rw, sizeof rw);
        return 0;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        *rc = put(data, &none, sizeof none);
        return 0;
    default:
        return -1;
    }
}

CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    CUresult (*fn)(void *, CUpointer_attribute, CUdeviceptr) = DRV_FN(cuPointerGetAttribute);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    struct ptr_owned o;
    if (!data || !track_guard_enter())
        return fn(data, attribute, ptr);
    CUresult rc;
    int owned = ptr_owned(ptr, &o);
    track_guard_leave();
    if (owned && ptr_answer(&o, ptr, attribute, data, &rc) == 0)
        return rc;
    return fn(data, attribute, ptr);
}

CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes,
                                void **data, CUdeviceptr ptr)
{
    CUresult (*fn)(unsigned int, CUpointer_attribute *, void **, CUdeviceptr) =
        DRV_FN(cuPointerGetAttributes);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    struct ptr_owned o;
    if (!attributes || !data || !track_guard_enter())
        return fn(numAttributes, attributes, data, ptr);
    int owned = ptr_owned(ptr, &o);
    track_guard_leave();
    if (!owned)
        return fn(numAttributes, attributes, data, ptr);
    /* The driver fills what it can (its answer for an away range may be an error: ours
     * replace it), then the shim's answers overwrite the attributes it knows. */
    CUresult real = fn(numAttributes, attributes, data, ptr);
    CUresult result = CUDA_SUCCESS;
    for (unsigned i = 0; i < numAttributes; i++) {
        CUresult rc;
        if (!data[i])
            continue;
        if (ptr_answer(&o, ptr, attributes[i], data[i], &rc) == 0) {
            /* cuPointerGetAttributes reports an attribute without a value (the host pointer of
             * device memory) as NULL, not as an error of the whole call. */
            if (rc != CUDA_SUCCESS)
                memset(data[i], 0, sizeof(void *));
        } else if (real != CUDA_SUCCESS) {
            result = real;
        }
    }
    return result;
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    CUresult (*fn)(CUdeviceptr *, size_t *, CUdeviceptr) = DRV_FN(cuMemGetAddressRange_v2);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    struct ptr_owned o;
    if (!track_guard_enter())
        return fn(pbase, psize, dptr);
    int owned = ptr_owned(dptr, &o);
    track_guard_leave();
    if (!owned)
        return fn(pbase, psize, dptr);
    if (pbase)
        *pbase = o.base;
    if (psize)
        *psize = (size_t)o.size;
    return CUDA_SUCCESS;
}
