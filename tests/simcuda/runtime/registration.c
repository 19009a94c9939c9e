/* registration: what nvcc-generated host code calls — fat binaries, their kernels and
 * variables, and the <<<>>> call configuration.
 *
 * A fat binary's device code cannot run here: each of its kernels becomes a no-op that launches
 * with the usual checks and is counted (launch.c), with the parameter layout its cubin gives, so
 * a framework's memory behaviour (its allocations, copies, memsets and the buffers its kernels
 * are passed) runs while its arithmetic does not. Device variables have
 * no device storage: taking their address answers cudaErrorInvalidSymbol. */
#include <stddef.h>

#include <cuda_runtime_api.h>

#include "error.h"
#include "launch.h"

/* host_runtime.h declares these only for C++; the real runtime exports them unversioned in
 * name, as here. */
void **__cudaRegisterFatBinary(void *fatCubin);
void __cudaRegisterFatBinaryEnd(void **fatCubinHandle);
void __cudaUnregisterFatBinary(void **fatCubinHandle);
void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
                            const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid,
                            dim3 *bDim, dim3 *gDim, int *wSize);
void __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress,
                       const char *deviceName, int ext, size_t size, int constant, int global);
unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                     struct CUstream_st *stream);
cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem,
                                       void *stream);

/* The handle is the image itself: its kernels' parameter layouts are read from it at their
 * first use (the driver's simcuRegisterNoopKernel). */
void **__cudaRegisterFatBinary(void *fatCubin)
{
    return (void **)fatCubin;
}

void __cudaRegisterFatBinaryEnd(void **fatCubinHandle)
{
    (void)fatCubinHandle;
}

void __cudaUnregisterFatBinary(void **fatCubinHandle)
{
    (void)fatCubinHandle;
}

/* Called from the library's constructor for every kernel it holds, before any CUDA call: only
 * recorded here, the driver function is made at the first launch. */
void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
                            const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid,
                            dim3 *bDim, dim3 *gDim, int *wSize)
{
    (void)deviceName, (void)thread_limit, (void)tid, (void)bid, (void)bDim, (void)gDim, (void)wSize;
    rt_kernel_declare(hostFun, deviceFun, fatCubinHandle);
}

void __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress,
                       const char *deviceName, int ext, size_t size, int constant, int global)
{
    (void)fatCubinHandle, (void)hostVar, (void)deviceAddress, (void)deviceName, (void)ext,
        (void)size, (void)constant, (void)global;
}

/* One configuration per thread between a <<<>>> and the stub's launch, as nvcc pairs them. */
static _Thread_local struct {
    dim3 grid, block;
    size_t shared;
    void *stream;
} pending;

unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                     struct CUstream_st *stream)
{
    pending.grid = gridDim;
    pending.block = blockDim;
    pending.shared = sharedMem;
    pending.stream = stream;
    return 0;
}

cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem,
                                       void *stream)
{
    *gridDim = pending.grid;
    *blockDim = pending.block;
    *sharedMem = pending.shared;
    *(void **)stream = pending.stream;
    return cudaSuccess;
}

cudaError_t cudaGetSymbolAddress(void **devPtr, const void *symbol)
{
    (void)devPtr, (void)symbol;
    return rt_error_set(cudaErrorInvalidSymbol);
}

cudaError_t cudaMemcpyToSymbol(const void *symbol, const void *src, size_t count, size_t offset,
                               enum cudaMemcpyKind kind)
{
    (void)symbol, (void)src, (void)count, (void)offset, (void)kind;
    return rt_error_set(cudaErrorInvalidSymbol);
}
