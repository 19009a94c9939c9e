/* simcuda: the extensions a program needs to run on the simulated CUDA stack.
 *
 * A simcuda "kernel" is a host function. A program built for simcuda registers each of its
 * kernels once, then launches it exactly as a real program launches a __global__ function:
 * cudaLaunchKernel(fn, grid, block, args, shmem, stream) or, through the driver,
 * cuLaunchKernel(func, ...) with the CUfunction obtained from simcuRegisterKernel.
 * Launches run synchronously on the calling thread; the kernel loops over its own index
 * space (typically grid*block threads, simulated by a loop).
 *
 * Private driver entry points are reachable through cuGetProcAddress_v2 under their own
 * names (as well as by dlsym), like every other driver function.
 */
#ifndef SIMCUDA_H
#define SIMCUDA_H

#include <stddef.h>
#include <stdint.h>
#include <cuda.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct simcuda_dim3 {
    unsigned x, y, z;
} simcuda_dim3;

typedef struct simcuda_launch {
    simcuda_dim3 grid;
    simcuda_dim3 block;
    size_t shared_bytes;
    CUstream stream;
} simcuda_launch;

/* params: one pointer per kernel parameter, as in cuLaunchKernel's kernelParams. */
typedef void (*simcuda_kernel_fn)(void **params, const simcuda_launch *launch);

/* libcuda.so.1: make a CUfunction for a host kernel. param_sizes[i] is the size of parameter
 * i; offsets follow the C ABI (each aligned to min(size, 8)). cuFuncGetParamInfo and
 * cuFuncGetName answer from this. Registering the same fn twice returns the same CUfunction.
 * param_sizes NULL with nparams > 0 registers a function without parameter information, like
 * a real function whose image carries none: cuFuncGetParamInfo answers
 * CUDA_ERROR_NOT_SUPPORTED, and it launches only with kernelParams (not `extra`). */
CUresult simcuRegisterKernel(simcuda_kernel_fn fn, const char *name, int nparams,
                             const size_t *param_sizes, CUfunction *out);

/* libcuda.so.1: make a CUfunction for a kernel whose code is device code (a fat binary's, as
 * the runtime registers them): it launches with the usual checks and counts, and does nothing.
 * Each call makes a new function. image: the fat binary __cudaRegisterFatBinary was given (or
 * NULL); the function's parameter layout is read from the kernel's cubin in it where simcuda
 * can (zstd-compressed or plain cubins), else it has no parameter information. */
CUresult simcuRegisterNoopKernel(const char *name, const void *image, CUfunction *out);

/* libcudart.so.13: register fn so that cudaLaunchKernel((const void *)fn, ...) and
 * cudaFuncGetParamInfo((const void *)fn, ...) work (param_sizes NULL: as above, without
 * parameter information). Returns cudaSuccess or an error. */
int simcudaRegisterKernel(simcuda_kernel_fn fn, const char *name, int nparams,
                          const size_t *param_sizes);

/* libcuda.so.1: counters kept for SIMCUDA_STATS. Libraries of the simulated stack (cuBLAS)
 * add to them through this entry point. */
enum simcu_counter {
    SIMCU_COUNTER_GEMM_CALLS = 0,
    SIMCU_COUNTER_KERNEL_LAUNCHES = 1,
};
void simcuStatsAdd(int counter, uint64_t n);

#ifdef __cplusplus
}
#endif

#endif /* SIMCUDA_H */
