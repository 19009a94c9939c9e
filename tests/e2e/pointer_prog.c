/* pointer-prog: pointer queries on allocations in every state the shim can put them in.
 *
 *   pointer-prog CEILING [async]
 *
 * Allocates a large buffer A and a small one S (a block of a shared chunk under the shim),
 * writes known bytes, then allocates enough others to push A off the device (under
 * MEMSHIM_POLICY=spill with MEMSHIM_LIMIT=CEILING), and asks about A, S and a resident buffer
 * through every door: cudaPointerGetAttributes (the runtime, which asks the driver through
 * the entry-point lookup), cuPointerGetAttribute(s) and cuMemGetAddressRange_v2 (exported
 * driver symbols). Each answer must be what cudaMalloc memory gives without the shim: device
 * memory of device 0, the allocation's own base and size, the current context, no host
 * pointer. Finally A's bytes are read back. With `async`, every allocation is stream-ordered
 * (cudaMallocAsync, S through cuMemAllocAsync) and freed with cudaFreeAsync: served and moved
 * the same way. Exit 0 and "pointer ok" when all held. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024ull * 1024)

static int failures;

#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL: " __VA_ARGS__);                                                 \
            fputc('\n', stderr);                                                                   \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

#define CK(call)                                                                                   \
    do {                                                                                           \
        long e_ = (long)(call);                                                                    \
        if (e_ != 0) {                                                                             \
            fprintf(stderr, "FAIL: %s (%ld)\n", #call, e_);                                        \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* Every question about ptr, which lies at offset `off` in the allocation [base, base+size). */
static int use_async;
static cudaStream_t stream;

static void alloc(char **p, size_t n, int driver)
{
    if (!use_async) {
        CK(cudaMalloc((void **)p, n));
    } else if (driver) {
        CUdeviceptr d = 0;
        CK(cuMemAllocAsync(&d, n, (CUstream)stream));
        *p = (char *)(uintptr_t)d;
    } else {
        CK(cudaMallocAsync((void **)p, n, stream));
    }
}

static void release(char *p)
{
    if (use_async)
        CK(cudaFreeAsync(p, stream));
    else
        CK(cudaFree(p));
}

static void ask(const char *name, char *base, size_t size, size_t off)
{
    char *ptr = base + off;
    CUdeviceptr dp = (CUdeviceptr)(uintptr_t)ptr;
    struct cudaPointerAttributes a;
    memset(&a, 0xab, sizeof a);
    CK(cudaPointerGetAttributes(&a, ptr));
    EXPECT(a.type == cudaMemoryTypeDevice, "%s: runtime type %d", name, (int)a.type);
    EXPECT(a.device == 0, "%s: runtime device %d", name, a.device);
    EXPECT(a.devicePointer == ptr, "%s: runtime devicePointer %p", name, a.devicePointer);
    EXPECT(a.hostPointer == NULL, "%s: runtime hostPointer %p", name, a.hostPointer);

    unsigned type = 0;
    int ordinal = -1, managed = -1;
    CUdeviceptr start = 0, devptr = 0;
    size_t range = 0;
    CUcontext ctx = NULL, cur = NULL;
    CK(cuCtxGetCurrent(&cur));
    CK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dp));
    EXPECT(type == CU_MEMORYTYPE_DEVICE, "%s: driver memory type %u", name, type);
    CK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, dp));
    EXPECT(ordinal == 0, "%s: driver ordinal %d", name, ordinal);
    CK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, dp));
    EXPECT(start == (CUdeviceptr)(uintptr_t)base, "%s: range start %#llx, base %p", name,
           (unsigned long long)start, (void *)base);
    CK(cuPointerGetAttribute(&range, CU_POINTER_ATTRIBUTE_RANGE_SIZE, dp));
    EXPECT(range == size, "%s: range size %zu, allocated %zu", name, range, size);
    CK(cuPointerGetAttribute(&ctx, CU_POINTER_ATTRIBUTE_CONTEXT, dp));
    EXPECT(ctx == cur, "%s: context %p, current %p", name, (void *)ctx, (void *)cur);
    CK(cuPointerGetAttribute(&devptr, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, dp));
    EXPECT(devptr == dp, "%s: device pointer %#llx", name, (unsigned long long)devptr);
    void *host = NULL;
    EXPECT(cuPointerGetAttribute(&host, CU_POINTER_ATTRIBUTE_HOST_POINTER, dp) ==
               CUDA_ERROR_INVALID_VALUE,
           "%s: device memory answered a host pointer", name);

    CUpointer_attribute attrs[] = {
        CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_HOST_POINTER};
    type = 0;
    ordinal = -1;
    host = (void *)1;
    void *data[] = {&type, &managed, &ordinal, &host};
    CK(cuPointerGetAttributes(4, attrs, data, dp));
    EXPECT(type == CU_MEMORYTYPE_DEVICE && managed == 0 && ordinal == 0 && host == NULL,
           "%s: cuPointerGetAttributes type %u managed %d ordinal %d host %p", name, type, managed,
           ordinal, host);

    CUdeviceptr rb = 0;
    size_t rs = 0;
    CK(cuMemGetAddressRange_v2(&rb, &rs, dp));
    EXPECT(rb == (CUdeviceptr)(uintptr_t)base && rs == size,
           "%s: cuMemGetAddressRange %#llx+%zu, allocated %p+%zu", name, (unsigned long long)rb, rs,
           (void *)base, size);
    CK(cuMemGetAddressRange_v2(NULL, &rs, dp)); /* either out-argument may be NULL */
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "async") != 0)) {
        fprintf(stderr, "usage: pointer-prog CEILING [async]\n");
        return 2;
    }
    use_async = argc == 3;
    if (use_async)
        CK(cudaStreamCreate(&stream));
    size_t ceiling = strtoull(argv[1], NULL, 0);
    size_t big = 6 * MIB + 4096, small = 3000;
    unsigned char *pattern = malloc(big), *back = malloc(big);
    if (!pattern || !back)
        return 1;
    for (size_t i = 0; i < big; i++)
        pattern[i] = (unsigned char)(i * 7 + 3);

    char *a = NULL, *s = NULL;
    alloc(&a, big, 0);
    alloc(&s, small, 1);
    CK(cudaMemcpy(a, pattern, big, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(s, pattern, small, cudaMemcpyHostToDevice));
    ask("small block", s, small, small / 2);

    /* Fill the rest of the ceiling twice over: A, least recently used, goes first. */
    size_t n = 2 * ceiling / big + 1;
    char **others = calloc(n, sizeof *others);
    for (size_t i = 0; i < n; i++) {
        alloc(&others[i], big, (int)(i & 1));
        CK(cudaMemset(others[i], (int)i, big));
    }
    ask("away", a, big, 0);
    ask("away+offset", a, big, big - 1);
    ask("resident", others[n - 1], big, 12345);

    CK(cudaMemcpy(back, a, big, cudaMemcpyDeviceToHost));
    EXPECT(memcmp(back, pattern, big) == 0, "A's bytes changed");
    for (size_t i = 0; i < n; i++)
        release(others[i]);
    release(a);
    release(s);
    if (use_async) {
        CK(cudaStreamSynchronize(stream));
        CK(cudaStreamDestroy(stream));
    }
    free(others);
    free(pattern);
    free(back);
    if (failures)
        return 1;
    printf("pointer ok\n");
    return 0;
}
