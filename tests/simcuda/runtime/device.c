/* device: device selection, properties, attributes, synchronization, reset and versions. */
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "context.h"
#include "error.h"

cudaError_t cudaGetDeviceCount(int *count)
{
    const rt_driver *drv;
    if (!count)
        return rt_error_set(cudaErrorInvalidValue);
    *count = 0;
    cudaError_t err = rt_enter_no_context(&drv);
    if (err != cudaSuccess)
        return err;
    return rt_error_cu(RT_CALL(drv, cuDeviceGetCount, count));
}

cudaError_t cudaSetDevice(int device)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter_no_context(&drv);
    return err ? err : rt_set_device(drv, device);
}

cudaError_t cudaGetDevice(int *device)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter_no_context(&drv);
    if (err != cudaSuccess)
        return err;
    if (!device)
        return rt_error_set(cudaErrorInvalidValue);
    *device = rt_current_device();
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    /* NULL: the current context, which rt_enter just bound. */
    return err ? err : rt_error_cu(RT_CALL(drv, cuCtxSynchronize_v2, NULL));
}

cudaError_t cudaDeviceReset(void)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter_no_context(&drv);
    return err ? err : rt_reset_device(drv);
}

cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter_no_context(&drv);
    if (err != cudaSuccess)
        return err;
    if (!value)
        return rt_error_set(cudaErrorInvalidValue);
    CUdevice dev;
    if (drv->cuDeviceGet(&dev, device) != CUDA_SUCCESS)
        return rt_error_set(cudaErrorInvalidDevice);
    /* cudaDeviceAttr shares its numbering with CUdevice_attribute. */
    return rt_error_cu(RT_CALL(drv, cuDeviceGetAttribute, value, (CUdevice_attribute)attr, dev));
}

/* cudaDeviceProp fields filled from one device attribute each. */
typedef struct prop_attr {
    size_t offset;
    bool is_size;
    CUdevice_attribute attr;
} prop_attr;

#define PROP_INT(field, attr)                                                                      \
    {                                                                                              \
        offsetof(struct cudaDeviceProp, field), false, attr                                        \
    }
#define PROP_SIZE(field, attr)                                                                     \
    {                                                                                              \
        offsetof(struct cudaDeviceProp, field), true, attr                                         \
    }

static const prop_attr prop_attrs[] = {
    PROP_SIZE(sharedMemPerBlock, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK),
    PROP_INT(regsPerBlock, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK),
    PROP_INT(warpSize, CU_DEVICE_ATTRIBUTE_WARP_SIZE),
    PROP_SIZE(memPitch, CU_DEVICE_ATTRIBUTE_MAX_PITCH),
    PROP_INT(maxThreadsPerBlock, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
    PROP_INT(maxThreadsDim[0], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X),
    PROP_INT(maxThreadsDim[1], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y),
    PROP_INT(maxThreadsDim[2], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z),
    PROP_INT(maxGridSize[0], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X),
    PROP_INT(maxGridSize[1], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y),
    PROP_INT(maxGridSize[2], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z),
    PROP_SIZE(totalConstMem, CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY),
    PROP_INT(major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
    PROP_INT(minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR),
    PROP_SIZE(textureAlignment, CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT),
    PROP_INT(multiProcessorCount, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
    PROP_INT(integrated, CU_DEVICE_ATTRIBUTE_INTEGRATED),
    PROP_INT(canMapHostMemory, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY),
    PROP_INT(concurrentKernels, CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS),
    PROP_INT(ECCEnabled, CU_DEVICE_ATTRIBUTE_ECC_ENABLED),
    PROP_INT(pciBusID, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID),
    PROP_INT(pciDeviceID, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID),
    PROP_INT(pciDomainID, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID),
    PROP_INT(asyncEngineCount, CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT),
    PROP_INT(unifiedAddressing, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING),
    PROP_INT(memoryBusWidth, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH),
    PROP_INT(l2CacheSize, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE),
    PROP_INT(maxThreadsPerMultiProcessor, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR),
    PROP_SIZE(sharedMemPerMultiprocessor, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR),
    PROP_INT(regsPerMultiprocessor, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR),
    PROP_INT(managedMemory, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY),
    PROP_INT(pageableMemoryAccess, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS),
    PROP_INT(concurrentManagedAccess, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS),
    PROP_INT(cooperativeLaunch, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH),
    PROP_SIZE(sharedMemPerBlockOptin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
    PROP_INT(maxBlocksPerMultiProcessor, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR),
    PROP_INT(memoryPoolsSupported, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED),
    PROP_INT(hostNativeAtomicSupported, CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED),
    PROP_INT(computePreemptionSupported, CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED),
    PROP_INT(clusterLaunch, CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH),
};

/* Attributes a driver does not know stay 0, as fields a device lacks. */
static void fill_from_attributes(const rt_driver *drv, CUdevice dev, struct cudaDeviceProp *prop)
{
    for (size_t i = 0; i < sizeof prop_attrs / sizeof prop_attrs[0]; i++) {
        int value = 0;
        if (RT_CALL(drv, cuDeviceGetAttribute, &value, prop_attrs[i].attr, dev) != CUDA_SUCCESS)
            continue;
        char *field = (char *)prop + prop_attrs[i].offset;
        if (prop_attrs[i].is_size) {
            size_t v = (size_t)(unsigned)value;
            memcpy(field, &v, sizeof v);
        } else {
            memcpy(field, &value, sizeof value);
        }
    }
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter_no_context(&drv);
    if (err != cudaSuccess)
        return err;
    if (!prop)
        return rt_error_set(cudaErrorInvalidValue);
    CUdevice dev;
    if (drv->cuDeviceGet(&dev, device) != CUDA_SUCCESS)
        return rt_error_set(cudaErrorInvalidDevice);
    memset(prop, 0, sizeof *prop);
    CUresult res = RT_CALL(drv, cuDeviceGetName, prop->name, (int)sizeof prop->name - 1, dev);
    if (res == CUDA_SUCCESS)
        res = RT_CALL(drv, cuDeviceTotalMem_v2, &prop->totalGlobalMem, dev);
    if (res != CUDA_SUCCESS)
        return rt_error_cu(res);
    RT_CALL(drv, cuDeviceGetUuid_v2, (CUuuid *)&prop->uuid, dev);
    fill_from_attributes(drv, dev, prop);
    return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *runtimeVersion)
{
    if (!runtimeVersion)
        return rt_error_set(cudaErrorInvalidValue);
    *runtimeVersion = CUDART_VERSION;
    return cudaSuccess;
}

/* As the real runtime: 0 (and success) when no driver can be loaded. */
cudaError_t cudaDriverGetVersion(int *driverVersion)
{
    const rt_driver *drv;
    if (!driverVersion)
        return rt_error_set(cudaErrorInvalidValue);
    *driverVersion = 0;
    if (rt_driver_load(&drv) != cudaSuccess || !drv->cuDriverGetVersion)
        return cudaSuccess;
    return rt_error_cu(drv->cuDriverGetVersion(driverVersion));
}

cudaError_t cudaDeviceGetPCIBusId(char *pciBusId, int len, int device)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter_no_context(&drv);
    if (err != cudaSuccess)
        return err;
    return rt_error_cu(RT_CALL(drv, cuDeviceGetPCIBusId, pciBusId, len, (CUdevice)device));
}
