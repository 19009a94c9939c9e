/* Kernels compiled by nvcc, run on simcuda: cudaFuncGetParamInfo must give each kernel's
 * parameter layout as the host compiler lays out the same list as a struct (the CUDA ABI
 * places kernel parameters with their natural alignment, as a struct's members), read by
 * simcuda from the cubin nvcc embedded (compressed or not, as the build chose). Every kernel is
 * launched too, by <<<>>> and through cuLaunchKernel's `extra` buffer, which needs the layout.
 * Exit 0 when all agree, 1 otherwise (a line per disagreement). */
#include <cuda.h>
#include <cuda_runtime.h>

#include <stddef.h>
#include <stdio.h>

struct small {
    int a;
    void *p;
    char c;
};

struct big {
    float v[100];
};

__global__ void k_ptrs(float *a, const double *b, int n)
{
    if (n < 0)
        a[0] = (float)b[0];
}

__global__ void k_mixed(char c, double d, short s, float *p, struct small m)
{
    if (c == 1 && d > 2 && s == 3 && m.a == 4)
        p[0] = 1.0f;
}

__global__ void k_none() {}

__global__ void k_big(struct big b, int *out)
{
    if (b.v[99] < 0)
        out[0] = 1;
}

/* The same lists as structs: the host compiler's layout is the referee. */
struct ptrs_args {
    float *a;
    const double *b;
    int n;
};

struct mixed_args {
    char c;
    double d;
    short s;
    float *p;
    struct small m;
};

struct big_args {
    struct big b;
    int *out;
};

#define FIELD(type, f)                                                                             \
    {                                                                                              \
        offsetof(type, f), sizeof(((type *)0)->f)                                                  \
    }

struct expect {
    size_t offset, size;
};

static int failures;

static void check(const char *name, const void *fn, const struct expect *e, int n)
{
    for (int i = 0; i <= n; i++) {
        size_t off = 0, size = 0;
        cudaError_t r = cudaFuncGetParamInfo(fn, (size_t)i, &off, &size);
        if (i == n) {
            if (r == cudaSuccess) {
                printf("%s: parameter %d of %d has a layout\n", name, i, n);
                failures++;
            }
            cudaGetLastError();
        } else if (r != cudaSuccess || off != e[i].offset || size != e[i].size) {
            printf("%s: parameter %d: %s offset %zu size %zu, host compiler %zu %zu\n", name, i,
                   cudaGetErrorName(r), off, size, e[i].offset, e[i].size);
            failures++;
        }
    }
}

/* The launch through the driver with the parameters packed as the host compiler lays them. */
static void launch_extra(const char *name, const void *fn, void *buf, size_t bytes)
{
    cudaFunction_t f;
    if (cudaGetFuncBySymbol(&f, fn) != cudaSuccess) {
        printf("%s: no driver function\n", name);
        failures++;
        return;
    }
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &bytes,
                     CU_LAUNCH_PARAM_END};
    CUresult r = cuLaunchKernel((CUfunction)f, 1, 1, 1, 1, 1, 1, 0, 0, NULL, extra);
    if (r != CUDA_SUCCESS) {
        printf("%s: cuLaunchKernel with extra: %d\n", name, (int)r);
        failures++;
    }
}

int main(void)
{
    float *d = NULL;
    if (cudaMalloc(&d, 4096) != cudaSuccess) {
        printf("cudaMalloc failed\n");
        return 1;
    }
    const struct expect ptrs[] = {FIELD(struct ptrs_args, a), FIELD(struct ptrs_args, b),
                                  FIELD(struct ptrs_args, n)};
    const struct expect mixed[] = {FIELD(struct mixed_args, c), FIELD(struct mixed_args, d),
                                   FIELD(struct mixed_args, s), FIELD(struct mixed_args, p),
                                   FIELD(struct mixed_args, m)};
    const struct expect big[] = {FIELD(struct big_args, b), FIELD(struct big_args, out)};
    check("k_ptrs", (const void *)k_ptrs, ptrs, 3);
    check("k_mixed", (const void *)k_mixed, mixed, 5);
    check("k_none", (const void *)k_none, NULL, 0);
    check("k_big", (const void *)k_big, big, 2);

    struct small m = {4, d, 5};
    struct big b = {{0}};
    k_ptrs<<<1, 1>>>(d, (const double *)d, 1);
    k_mixed<<<1, 1>>>(1, 3.0, 3, d, m);
    k_none<<<1, 1>>>();
    k_big<<<1, 1>>>(b, (int *)d);
    if (cudaDeviceSynchronize() != cudaSuccess || cudaGetLastError() != cudaSuccess) {
        printf("a <<<>>> launch failed\n");
        failures++;
    }
    struct ptrs_args pa = {d, (const double *)d, 1};
    struct mixed_args ma = {1, 3.0, 3, d, m};
    struct big_args ba = {b, (int *)d};
    launch_extra("k_ptrs", (const void *)k_ptrs, &pa, sizeof pa);
    launch_extra("k_mixed", (const void *)k_mixed, &ma, sizeof ma);
    launch_extra("k_big", (const void *)k_big, &ba, sizeof ba);
    cudaFree(d);
    printf("fatbin_params: %d disagreement(s)\n", failures);
    return failures != 0;
}
