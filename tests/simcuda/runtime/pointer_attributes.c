/* pointer_attributes: cudaPointerGetAttributes from the driver's per-attribute queries. */
#include <cuda_runtime_api.h>

#include "context.h"
#include "error.h"

static void fill_unregistered(struct cudaPointerAttributes *attr, const void *ptr)
{
    attr->type = cudaMemoryTypeUnregistered;
    attr->device = cudaInvalidDeviceId;
    attr->devicePointer = NULL;
    attr->hostPointer = (void *)ptr;
}

static enum cudaMemoryType runtime_type(CUmemorytype type, int managed)
{
    if (managed)
        return cudaMemoryTypeManaged;
    return type == CU_MEMORYTYPE_HOST ? cudaMemoryTypeHost : cudaMemoryTypeDevice;
}

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes, const void *ptr)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    if (!attributes)
        return rt_error_set(cudaErrorInvalidValue);
    if (!drv->cuPointerGetAttribute)
        return rt_error_set(cudaErrorNotSupported);
    CUdeviceptr p = (CUdeviceptr)ptr;
    CUmemorytype type = 0;
    /* Since CUDA 11 a pointer the driver does not know is plain host memory, not an error. */
    if (drv->cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) != CUDA_SUCCESS) {
        fill_unregistered(attributes, ptr);
        return cudaSuccess;
    }
    int managed = 0, ordinal = rt_current_device();
    void *dev_ptr = NULL, *host_ptr = NULL;
    drv->cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, p);
    drv->cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p);
    if (drv->cuPointerGetAttribute(&dev_ptr, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, p) !=
        CUDA_SUCCESS)
        dev_ptr = NULL;
    if (drv->cuPointerGetAttribute(&host_ptr, CU_POINTER_ATTRIBUTE_HOST_POINTER, p) != CUDA_SUCCESS)
        host_ptr = NULL;
    attributes->type = runtime_type(type, managed);
    attributes->device = ordinal;
    attributes->devicePointer = dev_ptr;
    attributes->hostPointer = host_ptr;
    return cudaSuccess;
}
