/* A library linked against libcudart, loaded RTLD_LOCAL by shim-local, as a Python extension
 * is: its libcudart is then outside the global scope, where the shim's cudaMalloc must still
 * find the real one. */
#include <cuda_runtime_api.h>
#include <stdint.h>

int shim_local_alloc(size_t bytes, uintptr_t *addr)
{
    void *p = NULL;
    cudaError_t r = cudaMalloc(&p, bytes);
    *addr = (uintptr_t)p;
    return r;
}

int shim_local_free(uintptr_t addr)
{
    return cudaFree((void *)addr);
}
