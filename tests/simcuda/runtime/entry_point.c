/* entry_point: cudaGetDriverEntryPoint(ByVersion), forwarded to the driver's cuGetProcAddress_v2
 * (itself obtained through cuGetProcAddress, as the real runtime does). Like any runtime call it
 * initializes the runtime first, so the functions it returns find a current context. The _ptsz
 * exports turn cudaEnableDefault into a per-thread-default-stream lookup. */
#include <stdbool.h>

#include <cuda_runtime_api.h>

#include "api_ptsz.h"
#include "context.h"
#include "error.h"

static cudaError_t entry_point(bool per_thread, const char *symbol, void **funcPtr,
                               unsigned int cudaVersion, unsigned long long flags,
                               enum cudaDriverEntryPointQueryResult *driverStatus)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    if (!symbol || !funcPtr)
        return rt_error_set(cudaErrorInvalidValue);
    if (per_thread && flags == cudaEnableDefault)
        flags = cudaEnablePerThreadDefaultStream;
    /* cudaEnable* equal CU_GET_PROC_ADDRESS_*, cudaDriverEntryPoint* equal CU_GET_PROC_ADDRESS_*
     * query results. */
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult res =
        RT_CALL(drv, cuGetProcAddress_v2, symbol, funcPtr, (int)cudaVersion, flags, &status);
    if (driverStatus)
        *driverStatus = (enum cudaDriverEntryPointQueryResult)status;
    return rt_error_cu(res);
}

cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr, unsigned long long flags,
                                    enum cudaDriverEntryPointQueryResult *driverStatus)
{
    return entry_point(false, symbol, funcPtr, CUDART_VERSION, flags, driverStatus);
}

cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr,
                                         unsigned long long flags,
                                         enum cudaDriverEntryPointQueryResult *driverStatus)
{
    return entry_point(true, symbol, funcPtr, CUDART_VERSION, flags, driverStatus);
}

cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr,
                                             unsigned int cudaVersion, unsigned long long flags,
                                             enum cudaDriverEntryPointQueryResult *driverStatus)
{
    return entry_point(false, symbol, funcPtr, cudaVersion, flags, driverStatus);
}

cudaError_t
cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **funcPtr, unsigned int cudaVersion,
                                      unsigned long long flags,
                                      enum cudaDriverEntryPointQueryResult *driverStatus)
{
    return entry_point(true, symbol, funcPtr, cudaVersion, flags, driverStatus);
}
