/* blas_driver: how the simulated cuBLAS and cuBLASLt reach libcuda.so.1.
 *
 * The real libraries carry a static cudart and link no driver: they dlopen("libcuda.so.1"),
 * dlsym its cuGetProcAddress_v2 and obtain every other driver function through it. So do these,
 * which is what puts cuBLAS's workspace allocations in front of the shim's entry-point hooks. */
#ifndef SIMCUDA_BLAS_DRIVER_H
#define SIMCUDA_BLAS_DRIVER_H

#include <cuda.h>

#include <stdbool.h>

/* Loads the driver once (thread-safe), calls cuInit(0) and makes sure the calling thread has a
 * current context (the primary context of device 0 when it has none, as cudart would).
 * Returns CUDA_SUCCESS or the failing driver result. */
CUresult blasdrv_enter(void);

/* cuMemAlloc_v2 / cuMemFree_v2 of the driver, for library-owned device memory. */
CUresult blasdrv_mem_alloc(CUdeviceptr *dptr, size_t bytes);
CUresult blasdrv_mem_free(CUdeviceptr dptr);

/* Counts one GEMM call in the driver's SIMCUDA_STATS (simcuStatsAdd). */
void blasdrv_count_gemm(void);

/* SIMCUDA_COMPUTE (default on), read once: off, GEMMs are validated and counted but compute
 * nothing and touch no memory. */
bool blasdrv_compute(void);

#endif
