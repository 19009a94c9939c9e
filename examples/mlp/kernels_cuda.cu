/* The kernels of kernels.inc built as device code by nvcc. */
#include "kernel_macros.h"
#include "kernels.h"

#include "kernels.inc"

static const void *const kernel_table[KERNELS_COUNT] = {
#define MLP_KERNEL_NAME(k) (const void *)k,
#include "kernels.def"
#undef MLP_KERNEL_NAME
};

extern "C" cudaError_t kernels_register(void)
{
    /* nvcc's generated constructors registered every __global__ function at load. */
    return cudaSuccess;
}

extern "C" const void *kernels_function(enum kernels_id id)
{
    return kernel_table[id];
}
