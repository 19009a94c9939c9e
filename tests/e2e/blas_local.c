/* blas-local: cuBLAS reached without being in the global scope, as frameworks do.
 *
 *     blas-local dlsym        dlopen("libcublas.so.13", RTLD_LOCAL), functions by dlsym
 *     blas-local lib LIB      LIB (linked to libcublas) dlopen'ed RTLD_LOCAL calls cuBLAS
 *     blas-local none         no cuBLAS at all: prints whether libcublas got loaded anyway
 *
 * Each GEMM is 2x3x4 fp32 on buffers printed as `buf NAME 0xADDR`. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <cublas_api.h>
#include <cuda_runtime_api.h>

static float *dev(const char *name, size_t bytes)
{
    void *p = NULL;
    if (cudaMalloc(&p, bytes) != cudaSuccess)
        return NULL;
    printf("buf %s %p\n", name, p);
    return p;
}

static int loaded(const char *lib)
{
    char line[4096];
    int found = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    while (f && fgets(line, sizeof line, f))
        found |= strstr(line, lib) != NULL;
    if (f)
        fclose(f);
    return found;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    float *a = dev("A", 256), *b = dev("B", 256), *c = dev("C", 256);
    if (!a || !b || !c)
        return 1;
    if (strcmp(argv[1], "none") == 0) {
        printf("libcublas loaded %d\n", loaded("libcublas"));
        return 0;
    }
    if (strcmp(argv[1], "lib") == 0 && argc > 2) {
        void *h = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
        int (*gemm)(float *, float *, float *) =
            h ? (int (*)(float *, float *, float *))dlsym(h, "blas_local_gemm") : NULL;
        return gemm ? gemm(a, b, c) : 1;
    }
    void *h = dlopen("libcublas.so.13", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return 1;
    cublasStatus_t (*create)(cublasHandle_t *) =
        (cublasStatus_t(*)(cublasHandle_t *))dlsym(h, "cublasCreate_v2");
    cublasStatus_t (*sgemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                            const float *, const float *, int, const float *, int, const float *,
                            float *, int) =
        (cublasStatus_t(*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                           const float *, const float *, int, const float *, int, const float *,
                           float *, int))dlsym(h, "cublasSgemm_v2");
    cublasHandle_t handle;
    const float one = 1.0f, zero = 0.0f;
    if (!create || !sgemm || create(&handle) != CUBLAS_STATUS_SUCCESS)
        return 1;
    return sgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 2, 3, 4, &one, a, 2, b, 4, &zero, c, 2);
}
