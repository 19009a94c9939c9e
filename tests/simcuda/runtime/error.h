/* error: CUresult -> cudaError_t translation and the per-thread last error of the runtime. */
#ifndef SIMCUDA_RT_ERROR_H
#define SIMCUDA_RT_ERROR_H

#include <cuda.h>
#include <cuda_runtime_api.h>

/* The runtime code for a driver result: the numbering has been shared since CUDA 10.1, so a
 * code cudaError_t also defines maps to itself (OUT_OF_MEMORY -> MemoryAllocation, ...), the rest
 * to cudaErrorUnknown. */
cudaError_t rt_error_from_cu(CUresult res);

/* Records err as this thread's last error unless it is cudaSuccess; returns err. */
cudaError_t rt_error_set(cudaError_t err);

/* rt_error_set(rt_error_from_cu(res)). */
cudaError_t rt_error_cu(CUresult res);

#endif
