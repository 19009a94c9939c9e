/* driver_table: the runtime's only way into libcuda.so.1.
 *
 * Like the real libcudart, the runtime links no driver symbol: on first use it dlopen()s
 * libcuda.so.1, dlsym()s cuGetProcAddress_v2 from that handle and resolves every function of
 * driver_api.def through it (cudaVersion RT_DRIVER_VERSION, legacy or per-thread stream flags),
 * then calls cuInit(0). Thread-safe; done once per process. */
#ifndef SIMCUDA_RT_DRIVER_TABLE_H
#define SIMCUDA_RT_DRIVER_TABLE_H

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "simcuda.h"

/* The CUDA version this runtime asks the driver for: 13.0, as CUDART_VERSION. */
#define RT_DRIVER_VERSION 13000

#define RT_LEGACY     CU_GET_PROC_ADDRESS_DEFAULT
#define RT_PER_THREAD CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM

typedef struct rt_driver {
#define RT_DRV(field, proto, symbol, flags) __typeof__(&proto) field;
#include "driver_api.def"
#undef RT_DRV
} rt_driver;

/* Loads the driver once. On success *out is the table (entries the driver lacks are NULL);
 * otherwise the error every runtime call returns from then on. */
cudaError_t rt_driver_load(const rt_driver **out);

/* Calls a table entry, or answers CUDA_ERROR_NOT_SUPPORTED when the driver lacks it. */
#define RT_CALL(drv, field, ...)                                                                   \
    ((drv)->field ? (drv)->field(__VA_ARGS__) : CUDA_ERROR_NOT_SUPPORTED)

#endif
