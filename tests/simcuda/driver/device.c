#include "device.h"

#include "env.h"
#include "export.h"
#include "stats.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

static atomic_bool initialized;
static bool host_vmm;
static bool compute;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static void read_env(void)
{
    host_vmm = env_flag("SIMCUDA_HOST_VMM", true);
    compute = env_flag("SIMCUDA_COMPUTE", true);
}

bool device_compute(void)
{
    pthread_once(&env_once, read_env);
    return compute;
}

bool device_host_vmm(void)
{
    pthread_once(&env_once, read_env);
    return host_vmm;
}

CUresult device_check_init(void)
{
    return atomic_load(&initialized) ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult device_check(CUdevice dev)
{
    CUresult rc = device_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    return dev == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

SIMCU_EXPORT CUresult cuInit(unsigned int Flags)
{
    if (Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    device_host_vmm();
    stats_capacity();
    stats_claim_process();
    atomic_store(&initialized, true);
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuDriverGetVersion(int *driverVersion)
{
    if (!driverVersion)
        return CUDA_ERROR_INVALID_VALUE;
    *driverVersion = DEVICE_DRIVER_VERSION;
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    CUresult rc = device_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (ordinal != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *device = 0;
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuDeviceGetCount(int *count)
{
    CUresult rc = device_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    *count = 1;
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    CUresult rc = device_check(dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)len, "%s", "simcuda");
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    CUresult rc = device_check(dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    *bytes = stats_capacity();
    return CUDA_SUCCESS;
}

static CUresult device_uuid(CUuuid *uuid, CUdevice dev)
{
    CUresult rc = device_check(dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!uuid)
        return CUDA_ERROR_INVALID_VALUE;
    memcpy(uuid->bytes, "simcuda-device-0", sizeof(uuid->bytes));
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    return device_uuid(uuid, dev);
}

SIMCU_EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    return device_uuid(uuid, dev);
}

SIMCU_EXPORT CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
    CUresult rc = device_check(dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!pciBusId || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(pciBusId, (size_t)len, "%s", "0000:00:00.0");
    return CUDA_SUCCESS;
}

/* An H100-like device: compute capability 9.0, 132 SMs. */
static const struct {
    CUdevice_attribute attr;
    int value;
} fixed_attributes[] = {
    {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1024},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 1024},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 64},
    {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 2147483647},
    {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 65535},
    {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 65535},
    {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 49152},
    {CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, 65536},
    {CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32},
    {CU_DEVICE_ATTRIBUTE_MAX_PITCH, 2147483647},
    {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, 65536},
    {CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 1980000},
    {CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, 512},
    {CU_DEVICE_ATTRIBUTE_GPU_OVERLAP, 1},
    {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 132},
    {CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, 1},
    {CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS, 1},
    {CU_DEVICE_ATTRIBUTE_ECC_ENABLED, 1},
    {CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, 2619000},
    {CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, 5120},
    {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 52428800},
    {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 2048},
    {CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, 3},
    {CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1},
    {CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT, 32},
    {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 9},
    {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0},
    {CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, 233472},
    {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, 65536},
    {CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 1},
    {CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO, 2},
    {CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, 1},
    {CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM, 1},
    {CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, 1},
    {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 232448},
    {CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST, 1},
    {CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, 32},
    {CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE, 34603008},
    {CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE, 134213632},
    {CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, 1024},
    {CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, 1},
    {CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT, 4},
    {CU_DEVICE_ATTRIBUTE_NUMA_ID, -1},
    {CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, 0},
};

static int attribute_value(CUdevice_attribute attrib)
{
    if (attrib == CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED ||
        attrib == CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)
        return device_host_vmm();
    for (size_t i = 0; i < sizeof(fixed_attributes) / sizeof(fixed_attributes[0]); i++)
        if (fixed_attributes[i].attr == attrib)
            return fixed_attributes[i].value;
    return 0; /* a feature this device does not have */
}

SIMCU_EXPORT CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    CUresult rc = device_check(dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!pi || (int)attrib <= 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    *pi = attribute_value(attrib);
    return CUDA_SUCCESS;
}
