/* The kernels of kernels.inc built as simcuda host kernels, and their registration. */
#include <math.h>

#include "kernel_macros.h"
#include "kernels.h"

#include "kernels.inc"

struct kernel_entry {
    simcuda_kernel_fn fn;
    const char *name;
    int nparams;
    const size_t *param_sizes;
};

static const struct kernel_entry kernel_table[KERNELS_COUNT] = {
#define MLP_KERNEL_NAME(k)                                                                         \
    [KERNELS_##k] = {k, #k, sizeof(k##_param_sizes) / sizeof(size_t), k##_param_sizes},
#include "kernels.def"
#undef MLP_KERNEL_NAME
};

cudaError_t kernels_register(void)
{
    for (int id = 0; id < KERNELS_COUNT; id++) {
        const struct kernel_entry *e = &kernel_table[id];
        int err = simcudaRegisterKernel(e->fn, e->name, e->nparams, e->param_sizes);
        if (err != cudaSuccess)
            return (cudaError_t)err;
    }
    return cudaSuccess;
}

const void *kernels_function(enum kernels_id id)
{
    return (const void *)kernel_table[id].fn;
}
