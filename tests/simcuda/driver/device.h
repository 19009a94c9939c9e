/* device: driver initialisation and the one simulated device's properties. */
#ifndef SIMCU_DEVICE_H
#define SIMCU_DEVICE_H

#include <cuda.h>

#include <stdbool.h>

#define DEVICE_DRIVER_VERSION 13000
#define DEVICE_GRANULARITY    (2ull << 20)

/* CUDA_SUCCESS once cuInit succeeded, else CUDA_ERROR_NOT_INITIALIZED. */
CUresult device_check_init(void);
/* CUDA_ERROR_INVALID_DEVICE unless dev is device 0. */
CUresult device_check(CUdevice dev);
/* Whether host-located VMM memory is offered (SIMCUDA_HOST_VMM, default 1). */
bool device_host_vmm(void);

/* SIMCUDA_COMPUTE (default on): off, memsets write nothing, so memory only a kernel or a
 * memset would have touched costs no host memory. */
bool device_compute(void);

#endif
