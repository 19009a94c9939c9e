/* access-prog: every kind of operation access tracking records, on simcuda, each with the
 * exact ranges it touches written to an expectation file that access_check.py holds against
 * the trace. Kernels receive device pointers inside a struct passed by value, through a
 * device array of pointers (only the array is visible to the shim), in the `extra` buffer
 * form, and at an offset inside an allocation; copies and sets touch sub-ranges.
 *
 * usage: access-prog EXPECT_FILE     (exit status 0 when every CUDA call succeeded) */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <simcuda.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* CUDA 13's <<<>>> entry points (crt/device_functions.h declares them for C++ only). */
cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *func);
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
                               size_t sharedMem, cudaStream_t stream);

enum { R = 1, W = 2, MAYBE = 4 };
enum { OP_MEMCPY = 2, OP_MEMSET = 3, OP_KERNEL = 4 };

static FILE *expect_file;
static int failures;

#define U(p) ((unsigned long long)(uintptr_t)(p))

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "access-prog: %s failed\n", what);
        failures++;
    }
}
#define CK(call) check((call) == 0, #call)

/* One expected op, then its ranges as (addr, size, alloc base, mode) quadruples. */
static void op(int kind, const char *name, unsigned long long stream, int n, ...)
{
    __builtin_va_list ap;
    __builtin_va_start(ap, n);
    fprintf(expect_file, "op %d %s %llu %d\n", kind, name, stream, n);
    for (int i = 0; i < n; i++) {
        unsigned long long addr = __builtin_va_arg(ap, unsigned long long);
        unsigned long long size = __builtin_va_arg(ap, unsigned long long);
        unsigned long long alloc = __builtin_va_arg(ap, unsigned long long);
        int mode = __builtin_va_arg(ap, int);
        fprintf(expect_file, "acc %llu %llu %llu %d\n", addr, size, alloc, mode);
    }
    __builtin_va_end(ap);
}

/* ---- kernels (host functions on simcuda) ---- */

struct pair {
    float *a;
    long n;
    float *b;
};

static void k_struct(void **params, const simcuda_launch *l)
{
    (void)l;
    struct pair p;
    float *out;
    memcpy(&p, params[0], sizeof p);
    memcpy(&out, params[1], sizeof out);
    out[0] = p.a[0] + p.b[p.n];
}

static void k_ptrarray(void **params, const simcuda_launch *l)
{
    (void)l;
    float **arr;
    int n;
    memcpy(&arr, params[0], sizeof arr);
    memcpy(&n, params[1], sizeof n);
    for (int i = 1; i < n; i++)
        arr[0][i] = arr[1][i];
}

static void k_scalar(void **params, const simcuda_launch *l)
{
    (void)params, (void)l;
}

/* k_struct's parameters, none of them used: it may be launched on a pointer that was freed. */
static void k_unused(void **params, const simcuda_launch *l)
{
    (void)params, (void)l;
}

static const size_t struct_sizes[] = {sizeof(struct pair), sizeof(float *), sizeof(int)};
static const size_t ptrarray_sizes[] = {sizeof(float **), sizeof(int)};
static const size_t scalar_sizes[] = {sizeof(int), sizeof(double), sizeof(void *)};

int main(int argc, char **argv)
{
    if (argc != 2 || !(expect_file = fopen(argv[1], "w"))) {
        fprintf(stderr, "usage: access-prog EXPECT_FILE\n");
        return 2;
    }
    CK(simcudaRegisterKernel(k_struct, "k_struct", 3, struct_sizes));
    CK(simcudaRegisterKernel(k_ptrarray, "k_ptrarray", 2, ptrarray_sizes));
    CK(simcudaRegisterKernel(k_scalar, "k_scalar", 3, scalar_sizes));
    CK(simcudaRegisterKernel(k_unused, "k_unused", 3, struct_sizes));

    char *A, *B, *C, *D;
    float **P;
    CK(cudaMalloc((void **)&A, 4096));
    CK(cudaMalloc((void **)&B, 2048));
    CK(cudaMalloc((void **)&C, 1024));
    CK(cudaMalloc((void **)&D, 1000)); /* charged 1024 */
    CK(cudaMalloc((void **)&P, 2 * sizeof(float *)));
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    static char host[8192];
    unsigned long long ss = U(s);

    /* ---- runtime copies and sets ---- */
    CK(cudaMemcpy(A + 64, host, 256, cudaMemcpyHostToDevice));
    op(OP_MEMCPY, "cudaMemcpy", 0, 1, U(A + 64), 256ull, U(A), W);
    CK(cudaMemcpy(host, B + 128, 100, cudaMemcpyDeviceToHost));
    op(OP_MEMCPY, "cudaMemcpy", 0, 1, U(B + 128), 100ull, U(B), R);
    CK(cudaMemcpy(C, A + 8, 512, cudaMemcpyDeviceToDevice));
    op(OP_MEMCPY, "cudaMemcpy", 0, 2, U(A + 8), 512ull, U(A), R, U(C), 512ull, U(C), W);
    CK(cudaMemcpy(host, A, 64, cudaMemcpyDefault)); /* the host side is not tracked */
    op(OP_MEMCPY, "cudaMemcpy", 0, 1, U(A), 64ull, U(A), R);
    CK(cudaMemcpy(A + 4, host, 16, cudaMemcpyDefault));
    op(OP_MEMCPY, "cudaMemcpy", 0, 1, U(A + 4), 16ull, U(A), W);
    CK(cudaMemcpy(A, host, 0, cudaMemcpyHostToDevice)); /* nothing touched: no op */
    CK(cudaMemcpyAsync(B, host, 32, cudaMemcpyHostToDevice, s));
    op(OP_MEMCPY, "cudaMemcpyAsync", ss, 1, U(B), 32ull, U(B), W);
    CK(cudaMemcpy2D(C, 256, host, 100, 100, 3, cudaMemcpyHostToDevice));
    op(OP_MEMCPY, "cudaMemcpy2D", 0, 1, U(C), 612ull, U(C), W);
    CK(cudaMemcpy2DAsync(host, 100, B + 256, 300, 90, 2, cudaMemcpyDeviceToHost, s));
    op(OP_MEMCPY, "cudaMemcpy2DAsync", ss, 1, U(B + 256), 390ull, U(B), R);
    CK(cudaMemset(B + 12, 0, 40));
    op(OP_MEMSET, "cudaMemset", 0, 1, U(B + 12), 40ull, U(B), W);
    CK(cudaMemsetAsync(C + 1, 1, 7, s));
    op(OP_MEMSET, "cudaMemsetAsync", ss, 1, U(C + 1), 7ull, U(C), W);
    CK(cudaMemset2D(D, 128, 0, 64, 4));
    op(OP_MEMSET, "cudaMemset2D", 0, 1, U(D), 448ull, U(D), W);
    CK(cudaMemset2DAsync(D + 8, 128, 0, 16, 2, s));
    op(OP_MEMSET, "cudaMemset2DAsync", ss, 1, U(D + 8), 144ull, U(D), W);
    CK(cudaMemcpyPeer(A, 0, B, 0, 64));
    op(OP_MEMCPY, "cudaMemcpyPeer", 0, 2, U(B), 64ull, U(B), R, U(A), 64ull, U(A), W);
    CK(cudaMemcpy(host, host + 4096, 16, cudaMemcpyHostToHost));
    /* host to host: no device range, no op */

    /* ---- driver copies and sets ---- */
    CK(cuMemcpyHtoD_v2((CUdeviceptr)(A + 32), host, 48));
    op(OP_MEMCPY, "cuMemcpyHtoD_v2", 0, 1, U(A + 32), 48ull, U(A), W);
    CK(cuMemcpyDtoH_v2(host, (CUdeviceptr)B, 24));
    op(OP_MEMCPY, "cuMemcpyDtoH_v2", 0, 1, U(B), 24ull, U(B), R);
    CK(cuMemcpy((CUdeviceptr)B, (CUdeviceptr)A, 8));
    op(OP_MEMCPY, "cuMemcpy", 0, 2, U(A), 8ull, U(A), R, U(B), 8ull, U(B), W);
    CK(cuMemsetD32_v2((CUdeviceptr)(C + 4), 7, 10));
    op(OP_MEMSET, "cuMemsetD32_v2", 0, 1, U(C + 4), 40ull, U(C), W);
    CK(cuMemsetD16Async((CUdeviceptr)D, 1, 6, (CUstream)s));
    op(OP_MEMSET, "cuMemsetD16Async", ss, 1, U(D), 12ull, U(D), W);
    CUDA_MEMCPY2D c2 = {.srcXInBytes = 8,
                        .srcY = 1,
                        .srcMemoryType = CU_MEMORYTYPE_DEVICE,
                        .srcDevice = (CUdeviceptr)A,
                        .srcPitch = 128,
                        .dstMemoryType = CU_MEMORYTYPE_HOST,
                        .dstHost = host,
                        .dstPitch = 16,
                        .WidthInBytes = 16,
                        .Height = 2};
    CK(cuMemcpy2D_v2(&c2));
    op(OP_MEMCPY, "cuMemcpy2D_v2", 0, 1, U(A + 136), 144ull, U(A), R);
    /* The lookup door: the driver's entry point table hands out the shim's wrapper. */
    CUresult (*dtod)(CUdeviceptr, CUdeviceptr, size_t) = NULL;
    CUdriverProcAddressQueryResult q;
    CK(cuGetProcAddress_v2("cuMemcpyDtoD", (void **)&dtod, 13000, 0, &q));
    check(dtod != NULL, "cuGetProcAddress_v2(cuMemcpyDtoD)");
    if (dtod)
        CK(dtod((CUdeviceptr)(C + 512), (CUdeviceptr)(B + 1024), 256));
    op(OP_MEMCPY, "cuMemcpyDtoD_v2", 0, 2, U(B + 1024), 256ull, U(B), R, U(C + 512), 256ull, U(C),
       W);

    /* A virtual-memory mapping (PyTorch's expandable segments): found by its mapped range. */
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    size_t gran = 0;
    CK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CUdeviceptr va = 0;
    CUmemGenericAllocationHandle h = 0;
    CK(cuMemAddressReserve(&va, 2 * gran, 0, 0, 0));
    CK(cuMemCreate(&h, gran, &prop, 0));
    CK(cuMemMap(va + gran, gran, 0, h, 0));
    CUmemAccessDesc acc = {.location = prop.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CK(cuMemSetAccess(va + gran, gran, &acc, 1));
    CK(cuMemsetD8_v2(va + gran + 100, 0, 10));
    op(OP_MEMSET, "cuMemsetD8_v2", 0, 1, U(va + gran + 100), 10ull, U(va + gran), W);

    /* ---- kernels ---- */
    float *arr_host[2] = {(float *)C, (float *)D};
    CK(cudaMemcpy(P, arr_host, sizeof arr_host, cudaMemcpyHostToDevice));
    op(OP_MEMCPY, "cudaMemcpy", 0, 1, U(P), 16ull, U(P), W);
    dim3 one = {1, 1, 1};
    struct pair pr = {(float *)(A + 64), 5, (float *)B};
    float *out = (float *)C;
    int scale = 3;
    void *args_struct[] = {&pr, &out, &scale};
    CK(cudaLaunchKernel((const void *)k_struct, one, one, args_struct, 0, s));
    /* The shim's parameter queries (one past the last parameter fails) leave no error. */
    CK(cudaGetLastError());
    op(OP_KERNEL, "k_struct", ss, 3, U(A), 4096ull, U(A), MAYBE, U(B), 2048ull, U(B), MAYBE, U(C),
       1024ull, U(C), MAYBE);

    CUfunction f_struct, f_ptrarray;
    CK(simcuRegisterKernel(k_struct, "k_struct", 3, struct_sizes, &f_struct));
    CK(simcuRegisterKernel(k_ptrarray, "k_ptrarray", 2, ptrarray_sizes, &f_ptrarray));
    struct pair pr2 = {(float *)D, 0, (float *)(D + 100)}; /* one allocation, twice */
    void *args_struct2[] = {&pr2, &out, &scale};
    CK(cuLaunchKernel(f_struct, 1, 1, 1, 1, 1, 1, 0, NULL, args_struct2, NULL));
    op(OP_KERNEL, "k_struct", 0, 2, U(D), 1024ull, U(D), MAYBE, U(C), 1024ull, U(C), MAYBE);

    /* The pointer array: the shim sees P, not C and D inside it. */
    int n = 2;
    struct {
        float **arr;
        int n;
    } packed = {P, n};
    size_t packed_size = 12;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE,
                     &packed_size, CU_LAUNCH_PARAM_END};
    CK(cuLaunchKernel(f_ptrarray, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, extra));
    op(OP_KERNEL, "k_ptrarray", 0, 1, U(P), 256ull, U(P), MAYBE);

    cudaKernel_t kern;
    CK(__cudaGetKernel(&kern, (const void *)k_ptrarray));
    void *args_arr[] = {&P, &n};
    CK(__cudaLaunchKernel(kern, one, one, args_arr, 0, NULL));
    op(OP_KERNEL, "k_ptrarray", 0, 1, U(P), 256ull, U(P), MAYBE);

    int ni = 9;
    double x = 2.5;
    void *hostp = host; /* a host pointer is no allocation */
    void *args_scalar[] = {&ni, &x, &hostp};
    cudaLaunchConfig_t cfg = {.gridDim = one, .blockDim = one, .stream = s};
    CK(cudaLaunchKernelExC(&cfg, (const void *)k_scalar, args_scalar));
    op(OP_KERNEL, "k_scalar", ss, 0);

    CUlaunchConfig dcfg = {.gridDimX = 1,
                           .gridDimY = 1,
                           .gridDimZ = 1,
                           .blockDimX = 1,
                           .blockDimY = 1,
                           .blockDimZ = 1,
                           .hStream = (CUstream)s};
    char *mid = B + 700; /* inside B */
    void *args_struct3[] = {&pr2, &mid, &scale};
    CK(cuLaunchKernelEx(&dcfg, f_struct, args_struct3, NULL));
    op(OP_KERNEL, "k_struct", ss, 2, U(D), 1024ull, U(D), MAYBE, U(B), 2048ull, U(B), MAYBE);

    /* ---- the same launch again: recorded as a repeat without looking anything up, until the
     * allocations change under the same parameter words ---- */
    for (int i = 0; i < 3; i++) {
        CK(cudaLaunchKernel((const void *)k_unused, one, one, args_struct, 0, s));
        op(OP_KERNEL, "k_unused", ss, 3, U(A), 4096ull, U(A), MAYBE, U(B), 2048ull, U(B), MAYBE,
           U(C), 1024ull, U(C), MAYBE);
    }
    CK(cudaLaunchKernel((const void *)k_unused, one, one, args_struct, 0, NULL)); /* other stream */
    op(OP_KERNEL, "k_unused", 0, 3, U(A), 4096ull, U(A), MAYBE, U(B), 2048ull, U(B), MAYBE, U(C),
       1024ull, U(C), MAYBE);
    /* C is replaced by a larger allocation; `out` still holds C's old address. */
    char *C2;
    CK(cudaFree(C));
    CK(cudaMalloc((void **)&C2, 8192));
    for (int i = 0; i < 2; i++) {
        CK(cudaLaunchKernel((const void *)k_unused, one, one, args_struct, 0, s));
        if (C2 == C) /* the address came back: the new allocation holds it */
            op(OP_KERNEL, "k_unused", ss, 3, U(A), 4096ull, U(A), MAYBE, U(B), 2048ull, U(B), MAYBE,
               U(C2), 8192ull, U(C2), MAYBE);
        else /* it points at nothing tracked now */
            op(OP_KERNEL, "k_unused", ss, 2, U(A), 4096ull, U(A), MAYBE, U(B), 2048ull, U(B),
               MAYBE);
    }
    C = C2;

    CK(cudaStreamSynchronize(s));
    CK(cudaStreamDestroy(s));
    CK(cuMemUnmap(va + gran, gran));
    CK(cuMemRelease(h));
    CK(cuMemAddressFree(va, 2 * gran));
    CK(cudaFree(A));
    CK(cudaFree(B));
    CK(cudaFree(C));
    CK(cudaFree(D));
    CK(cudaFree(P));
    fclose(expect_file);
    printf("access-prog: %d failures\n", failures);
    return failures ? 1 : 0;
}
