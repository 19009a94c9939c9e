/* not_simulated: runtime calls for what simcuda does not have — other processes (IPC), other
 * devices (peer access), loadable device code (the library API) and a profiler. Each answers
 * as the real runtime does where that is well defined (one device: no peer can be accessed;
 * the profiler calls do nothing), else cudaErrorNotSupported. */
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>

#include "context.h"
#include "error.h"

static cudaError_t not_supported(void)
{
    return rt_error_set(cudaErrorNotSupported);
}

cudaError_t cudaDeviceCanAccessPeer(int *canAccessPeer, int device, int peerDevice)
{
    if (!canAccessPeer)
        return rt_error_set(cudaErrorInvalidValue);
    if (device != 0 || peerDevice != 0)
        return rt_error_set(cudaErrorInvalidDevice);
    *canAccessPeer = 0;
    return cudaSuccess;
}

cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags)
{
    (void)flags;
    (void)peerDevice;
    return rt_error_set(cudaErrorInvalidDevice);
}

cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *handle, void *devPtr)
{
    (void)handle, (void)devPtr;
    return not_supported();
}

cudaError_t cudaIpcOpenMemHandle(void **devPtr, cudaIpcMemHandle_t handle, unsigned int flags)
{
    (void)devPtr, (void)handle, (void)flags;
    return not_supported();
}

cudaError_t cudaIpcCloseMemHandle(void *devPtr)
{
    (void)devPtr;
    return not_supported();
}

cudaError_t cudaIpcGetEventHandle(cudaIpcEventHandle_t *handle, cudaEvent_t event)
{
    (void)handle, (void)event;
    return not_supported();
}

cudaError_t cudaIpcOpenEventHandle(cudaEvent_t *event, cudaIpcEventHandle_t handle)
{
    (void)event, (void)handle;
    return not_supported();
}

cudaError_t cudaLibraryLoadData(cudaLibrary_t *library, const void *code,
                                enum cudaJitOption *jitOptions, void **jitOptionsValues,
                                unsigned int numJitOptions, enum cudaLibraryOption *libraryOptions,
                                void **libraryOptionValues, unsigned int numLibraryOptions)
{
    (void)library, (void)code, (void)jitOptions, (void)jitOptionsValues, (void)numJitOptions,
        (void)libraryOptions, (void)libraryOptionValues, (void)numLibraryOptions;
    return not_supported();
}

cudaError_t cudaLibraryLoadFromFile(cudaLibrary_t *library, const char *fileName,
                                    enum cudaJitOption *jitOptions, void **jitOptionsValues,
                                    unsigned int numJitOptions,
                                    enum cudaLibraryOption *libraryOptions,
                                    void **libraryOptionValues, unsigned int numLibraryOptions)
{
    (void)library, (void)fileName, (void)jitOptions, (void)jitOptionsValues, (void)numJitOptions,
        (void)libraryOptions, (void)libraryOptionValues, (void)numLibraryOptions;
    return not_supported();
}

/* No library can be loaded, so every handle is invalid. */
cudaError_t cudaLibraryUnload(cudaLibrary_t library)
{
    (void)library;
    return rt_error_set(cudaErrorInvalidResourceHandle);
}

cudaError_t cudaLibraryGetKernel(cudaKernel_t *pKernel, cudaLibrary_t library, const char *name)
{
    (void)pKernel, (void)library, (void)name;
    return rt_error_set(cudaErrorInvalidResourceHandle);
}

cudaError_t cudaLibraryGetKernelCount(unsigned int *count, cudaLibrary_t lib)
{
    (void)count, (void)lib;
    return rt_error_set(cudaErrorInvalidResourceHandle);
}

cudaError_t cudaLibraryGetGlobal(void **dptr, size_t *bytes, cudaLibrary_t library,
                                 const char *name)
{
    (void)dptr, (void)bytes, (void)library, (void)name;
    return rt_error_set(cudaErrorInvalidResourceHandle);
}

cudaError_t cudaLibraryGetManaged(void **dptr, size_t *bytes, cudaLibrary_t library,
                                  const char *name)
{
    (void)dptr, (void)bytes, (void)library, (void)name;
    return rt_error_set(cudaErrorInvalidResourceHandle);
}

cudaError_t cudaLibraryGetUnifiedFunction(void **fptr, cudaLibrary_t library, const char *symbol)
{
    (void)fptr, (void)library, (void)symbol;
    return rt_error_set(cudaErrorInvalidResourceHandle);
}

cudaError_t cudaProfilerStart(void)
{
    return cudaSuccess;
}

cudaError_t cudaProfilerStop(void)
{
    return cudaSuccess;
}
