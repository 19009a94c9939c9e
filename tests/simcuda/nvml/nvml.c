/* nvml: a libnvidia-ml.so.1 for the one simulated device, with the calls PyTorch makes: the
 * device by index, PCI bus id or UUID (those of libcuda.so.1's device 0), the driver version,
 * the processes using the device (this one, with the driver's used bytes), no fabric, and
 * NOT_SUPPORTED for NVLink queries (a lone PCIe device has neither).
 *
 * The toolkit ships no nvml.h, so the ABI is declared here: nvmlReturn_t is an int, a device
 * handle an opaque pointer, and the process list is the v1 layout of the unversioned symbol. */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>

#define NVML_EXPORT __attribute__((visibility("default")))

typedef int nvmlReturn_t;
enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_UNKNOWN = 999,
};
enum { NVML_P2P_STATUS_NOT_SUPPORTED = 5 };

typedef struct nvml_device *nvmlDevice_t;
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
} nvml_process_v1;

/* The same identity libcuda.so.1 gives device 0. */
#define SIM_PCI_BUS_ID "0000:00:00.0"
#define SIM_UUID       "GPU-73696d63-7564-612d-6465-766963652d30" /* "simcuda-device-0" */

static struct nvml_device {
    int index;
} device0;
static atomic_int init_count;

static nvmlReturn_t check_init(void)
{
    return atomic_load(&init_count) > 0 ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED;
}

static nvmlReturn_t check_device(nvmlDevice_t device)
{
    nvmlReturn_t rc = check_init();
    if (rc == NVML_SUCCESS && device != &device0)
        rc = NVML_ERROR_INVALID_ARGUMENT;
    return rc;
}

NVML_EXPORT nvmlReturn_t nvmlInit_v2(void)
{
    atomic_fetch_add(&init_count, 1);
    return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlInit(void)
{
    return nvmlInit_v2();
}

NVML_EXPORT nvmlReturn_t nvmlShutdown(void)
{
    int n = atomic_load(&init_count);
    while (n > 0 && !atomic_compare_exchange_weak(&init_count, &n, n - 1))
        ;
    return n > 0 ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED;
}

NVML_EXPORT const char *nvmlErrorString(nvmlReturn_t result)
{
    switch (result) {
    case NVML_SUCCESS:
        return "Success";
    case NVML_ERROR_UNINITIALIZED:
        return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
        return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
        return "Not Supported";
    case NVML_ERROR_NOT_FOUND:
        return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
        return "Insufficient Size";
    default:
        return "Unknown Error";
    }
}

NVML_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion)
{
    if (!cudaDriverVersion)
        return NVML_ERROR_INVALID_ARGUMENT;
    *cudaDriverVersion = 13000;
    return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *cudaDriverVersion)
{
    return nvmlSystemGetCudaDriverVersion_v2(cudaDriverVersion);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
    nvmlReturn_t rc = check_init();
    if (rc == NVML_SUCCESS && !deviceCount)
        rc = NVML_ERROR_INVALID_ARGUMENT;
    if (rc == NVML_SUCCESS)
        *deviceCount = 1;
    return rc;
}

static nvmlReturn_t found(int match, nvmlDevice_t *device)
{
    nvmlReturn_t rc = check_init();
    if (rc != NVML_SUCCESS)
        return rc;
    if (!device)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!match)
        return NVML_ERROR_NOT_FOUND;
    *device = &device0;
    return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    if (check_init() == NVML_SUCCESS && index != 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    return found(1, device);
}

/* Bus ids compare without case, with or without the 8-digit domain form. */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId,
                                                          nvmlDevice_t *device)
{
    if (!pciBusId)
        return NVML_ERROR_INVALID_ARGUMENT;
    const char *tail = strchr(pciBusId, ':');
    int match = strcasecmp(pciBusId, SIM_PCI_BUS_ID) == 0 ||
                (tail && strcasecmp(tail, strchr(SIM_PCI_BUS_ID, ':')) == 0 &&
                 strspn(pciBusId, "0") == (size_t)(tail - pciBusId));
    return found(match, device);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
    if (!uuid)
        return NVML_ERROR_INVALID_ARGUMENT;
    return found(strcasecmp(uuid, SIM_UUID) == 0, device);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
    nvmlReturn_t rc = check_device(device);
    if (rc != NVML_SUCCESS)
        return rc;
    if (!uuid)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (length < sizeof SIM_UUID)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(uuid, SIM_UUID, sizeof SIM_UUID);
    return NVML_SUCCESS;
}

/* The bytes in use on the device, from the driver this process already loaded (none if it has
 * not, or has no current context). */
static unsigned long long device_used_bytes(void)
{
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!cuda)
        return 0;
    CUresult (*get_info)(size_t *, size_t *) = NULL;
    *(void **)&get_info = dlsym(cuda, "cuMemGetInfo_v2");
    size_t free_bytes = 0, total = 0;
    unsigned long long used = 0;
    if (get_info && get_info(&free_bytes, &total) == CUDA_SUCCESS)
        used = total - free_bytes;
    dlclose(cuda);
    return used;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device,
                                                              unsigned int *infoCount,
                                                              nvml_process_v1 *infos)
{
    nvmlReturn_t rc = check_device(device);
    if (rc != NVML_SUCCESS)
        return rc;
    if (!infoCount)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned int room = *infoCount;
    *infoCount = 1;
    if (room < 1 || !infos)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    infos[0] = (nvml_process_v1){.pid = (unsigned)getpid(), .usedGpuMemory = device_used_bytes()};
    return NVML_SUCCESS;
}

/* One device on PCIe: no fabric, no NVLink, no peer. The fabric query succeeds and says so,
 * as on a PCIe H100: from the version word on, the v2 and v3 structures begin with the cluster
 * UUID (16 bytes), the probe status, the clique id, the state (one byte, 0 = NOT_SUPPORTED)
 * and the health mask, and all-zero is "not supported, no error". */
#define FABRIC_INFO_ZEROED_BYTES 32

NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t device, void *gpuFabricInfo)
{
    nvmlReturn_t rc = check_device(device);
    if (rc != NVML_SUCCESS)
        return rc;
    unsigned version;
    if (!gpuFabricInfo)
        return NVML_ERROR_INVALID_ARGUMENT;
    memcpy(&version, gpuFabricInfo, sizeof version);
    if (version == 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    memset((char *)gpuFabricInfo + sizeof version, 0, FABRIC_INFO_ZEROED_BYTES);
    return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t device, unsigned int link,
                                                             int *pNvLinkDeviceType)
{
    (void)link, (void)pNvLinkDeviceType;
    nvmlReturn_t rc = check_device(device);
    return rc != NVML_SUCCESS ? rc : NVML_ERROR_NOT_SUPPORTED;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link,
                                                             void *pci)
{
    (void)link, (void)pci;
    nvmlReturn_t rc = check_device(device);
    return rc != NVML_SUCCESS ? rc : NVML_ERROR_NOT_SUPPORTED;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t device1, nvmlDevice_t device2,
                                                int p2pIndex, int *p2pStatus)
{
    (void)p2pIndex;
    nvmlReturn_t rc = check_device(device1);
    if (rc == NVML_SUCCESS)
        rc = check_device(device2);
    if (rc == NVML_SUCCESS && !p2pStatus)
        rc = NVML_ERROR_INVALID_ARGUMENT;
    if (rc == NVML_SUCCESS)
        *p2pStatus = NVML_P2P_STATUS_NOT_SUPPORTED;
    return rc;
}
