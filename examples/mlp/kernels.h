/* The kernel table: host code names kernels by id and launches them with cudaLaunchKernel;
 * kernels_cuda.cu (nvcc) and kernels_sim.c (simcuda) each provide the table for their build.
 */
#ifndef MLP_KERNELS_H
#define MLP_KERNELS_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Activation codes, passed to the bias_act_fwd and act_bwd kernels. */
#define MLP_ACT_RELU 0
#define MLP_ACT_GELU 1

enum kernels_id {
#define MLP_KERNEL_NAME(name) KERNELS_##name,
#include "kernels.def"
#undef MLP_KERNEL_NAME
    KERNELS_COUNT
};

/* Make every kernel launchable (simcuda needs each host kernel registered once; on a GPU the
 * nvcc-generated constructors already did it). */
cudaError_t kernels_register(void);

/* The function to pass to cudaLaunchKernel for kernel id. */
const void *kernels_function(enum kernels_id id);

#ifdef __cplusplus
}
#endif

#endif /* MLP_KERNELS_H */
