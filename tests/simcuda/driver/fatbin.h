/* fatbin: a kernel's parameter layout read from the fat binary nvcc embedded for it, as the real
 * driver reads it when it loads the module: the kernel's `.nv.info.<name>` section of a cubin
 * (ELF) in the fat binary, its EIATTR_KPARAM_INFO attributes (ordinal, offset, size of each
 * parameter). Cubins compressed with zstd (nvcc's default `-compress-mode`, and PyTorch's
 * wheels) are read when simcuda was built with libzstd; other compressions and fat binaries
 * holding PTX only have no layout (the kernel then answers cuFuncGetParamInfo with
 * CUDA_ERROR_NOT_SUPPORTED, as before). */
#ifndef SIMCUDA_FATBIN_H
#define SIMCUDA_FATBIN_H

#include <stddef.h>

struct fatbin_params {
    int n;           /* parameters */
    size_t *offsets; /* n each, malloc'd; the caller frees them */
    size_t *sizes;
    size_t total; /* bytes of the packed parameter buffer */
};

/* The layout of kernel `name` in the fat binary `wrapper` (what __cudaRegisterFatBinary was
 * given). 0 and *out filled, or -1 (no layout found, out of memory). Thread-safe. */
int fatbin_params(const void *wrapper, const char *name, struct fatbin_params *out);

/* The same from a container (the data a wrapper points at) known to be `size` bytes long: no
 * byte outside it is read, whatever its headers say (the fuzz target's entry). */
int fatbin_params_in(const void *container, size_t size, const char *name,
                     struct fatbin_params *out);

#endif /* SIMCUDA_FATBIN_H */
