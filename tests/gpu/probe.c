/* gpu-probe: the allocation-path check of tests/gpu/run.sh, for a real GPU. It allocates
 * through every path the shim hooks, each time measuring what the driver says it took
 * (cudaMemGetInfo before and after), and prints one fact a line for run.sh to hold against the
 * trace:
 *
 *     meminfo FREE TOTAL                 cudaMemGetInfo at start (the shim reports its ceiling)
 *     path NAME KIND REQUESTED DELTA     one allocation; KIND as the trace names it, DELTA the
 *                                        drop of free device memory while it was alive
 *     ceiling NAME OK CODE               ceiling mode: CHUNK-byte allocations that succeeded
 *                                        before the first refusal, and that refusal's code
 *
 * Built by run.sh against the shared and the static cudart (the static one reaches the driver
 * only through cuGetProcAddress, as libraries with a static cudart do).
 * Usage: gpu-probe paths | gpu-probe ceiling CHUNK_MIB */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#define MIB        (1024ull * 1024ull)
#define PATH_BYTES (64 * MIB)
#define MAX_CHUNKS 4096

static void die(const char *what, int code)
{
    fprintf(stderr, "gpu-probe: %s failed: %d\n", what, code);
    exit(1);
}

#define CK_RT(call)                                                                                \
    do {                                                                                           \
        cudaError_t r_ = (call);                                                                   \
        if (r_ != cudaSuccess)                                                                     \
            die(#call, r_);                                                                        \
    } while (0)
#define CK_DRV(call)                                                                               \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS)                                                                    \
            die(#call, r_);                                                                        \
    } while (0)

static size_t free_bytes(void)
{
    size_t f = 0, t = 0;
    CK_RT(cudaDeviceSynchronize());
    CK_RT(cudaMemGetInfo(&f, &t));
    return f;
}

static void said(const char *name, const char *kind, size_t requested, size_t before, size_t after)
{
    long long delta = (long long)before - (long long)after;
    printf("path %s %s %zu %lld\n", name, kind, requested, delta);
}

/* A device-located pool with its release threshold at 0, so freed memory goes back at sync. */
static CUmemoryPool new_pool(void)
{
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    CUmemoryPool pool;
    CK_DRV(cuMemPoolCreate(&pool, &props));
    return pool;
}

struct vmm {
    CUmemGenericAllocationHandle handle;
    CUdeviceptr va;
    size_t size;
};

static CUresult vmm_alloc(struct vmm *v, size_t size)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    v->size = size;
    CUresult r = cuMemCreate(&v->handle, size, &prop, 0);
    if (r != CUDA_SUCCESS)
        return r;
    CK_DRV(cuMemAddressReserve(&v->va, size, 0, 0, 0));
    CK_DRV(cuMemMap(v->va, size, 0, v->handle, 0));
    CUmemAccessDesc access = {{CU_MEM_LOCATION_TYPE_DEVICE, 0}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CK_DRV(cuMemSetAccess(v->va, size, &access, 1));
    return CUDA_SUCCESS;
}

static void vmm_free(struct vmm *v)
{
    CK_DRV(cuMemUnmap(v->va, v->size));
    CK_DRV(cuMemRelease(v->handle));
    CK_DRV(cuMemAddressFree(v->va, v->size));
}

static int mode_paths(void)
{
    size_t b, pitch;
    void *p;
    CUdeviceptr d;

    b = free_bytes();
    CK_RT(cudaMalloc(&p, PATH_BYTES));
    said("cudaMalloc", "cudaMalloc", PATH_BYTES, b, free_bytes());
    CK_RT(cudaFree(p));

    b = free_bytes();
    CK_RT(cudaMallocPitch(&p, &pitch, 8192, PATH_BYTES / 8192));
    said("cudaMallocPitch", "cudaMallocPitch", PATH_BYTES, b, free_bytes());
    CK_RT(cudaFree(p));

    struct cudaExtent ext = {8192, 1024, PATH_BYTES / (8192 * 1024)};
    struct cudaPitchedPtr pp;
    b = free_bytes();
    CK_RT(cudaMalloc3D(&pp, ext));
    said("cudaMalloc3D", "cudaMalloc3D", PATH_BYTES, b, free_bytes());
    CK_RT(cudaFree(pp.ptr));

    /* Managed memory takes device pages only when touched there: a memset does. */
    b = free_bytes();
    CK_RT(cudaMallocManaged(&p, PATH_BYTES, cudaMemAttachGlobal));
    CK_RT(cudaMemset(p, 0, PATH_BYTES));
    said("cudaMallocManaged", "cudaMallocManaged", PATH_BYTES, b, free_bytes());
    CK_RT(cudaFree(p));

    b = free_bytes();
    CK_RT(cudaMallocAsync(&p, PATH_BYTES, 0));
    said("cudaMallocAsync", "cudaMallocAsync", PATH_BYTES, b, free_bytes());
    CK_RT(cudaFreeAsync(p, 0));

    CUmemoryPool pool = new_pool();
    b = free_bytes();
    CK_RT(cudaMallocFromPoolAsync(&p, PATH_BYTES, (cudaMemPool_t)pool, 0));
    said("cudaMallocFromPoolAsync", "cudaMallocFromPoolAsync", PATH_BYTES, b, free_bytes());
    CK_RT(cudaFreeAsync(p, 0));

    b = free_bytes();
    CK_DRV(cuMemAlloc(&d, PATH_BYTES));
    said("cuMemAlloc", "cuMemAlloc", PATH_BYTES, b, free_bytes());
    CK_DRV(cuMemFree(d));

    b = free_bytes();
    CK_DRV(cuMemAllocPitch(&d, &pitch, 8192, PATH_BYTES / 8192, 16));
    said("cuMemAllocPitch", "cuMemAllocPitch", PATH_BYTES, b, free_bytes());
    CK_DRV(cuMemFree(d));

    b = free_bytes();
    CK_DRV(cuMemAllocManaged(&d, PATH_BYTES, CU_MEM_ATTACH_GLOBAL));
    CK_DRV(cuMemsetD8(d, 0, PATH_BYTES));
    said("cuMemAllocManaged", "cuMemAllocManaged", PATH_BYTES, b, free_bytes());
    CK_DRV(cuMemFree(d));

    b = free_bytes();
    CK_DRV(cuMemAllocAsync(&d, PATH_BYTES, 0));
    said("cuMemAllocAsync", "cuMemAllocAsync", PATH_BYTES, b, free_bytes());
    CK_DRV(cuMemFreeAsync(d, 0));

    b = free_bytes();
    CK_DRV(cuMemAllocFromPoolAsync(&d, PATH_BYTES, pool, 0));
    said("cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync", PATH_BYTES, b, free_bytes());
    CK_DRV(cuMemFreeAsync(d, 0));
    CK_RT(cudaDeviceSynchronize());
    CK_DRV(cuMemPoolDestroy(pool));

    struct vmm v;
    b = free_bytes();
    CK_DRV(vmm_alloc(&v, PATH_BYTES));
    said("cuMemCreate", "cuMemCreate", PATH_BYTES, b, free_bytes());
    vmm_free(&v);

    /* The door PyTorch's c10 driver API and the static cudart use: an entry-point lookup. */
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult st;
    CK_RT(cudaGetDriverEntryPointByVersion("cuMemAlloc", &fn, 12000, cudaEnableDefault, &st));
    if (!fn)
        die("cudaGetDriverEntryPointByVersion(cuMemAlloc)", (int)st);
    b = free_bytes();
    CK_DRV(((CUresult(*)(CUdeviceptr *, size_t))fn)(&d, PATH_BYTES));
    said("entrypoint:cuMemAlloc", "cuMemAlloc", PATH_BYTES, b, free_bytes());
    CK_DRV(cuMemFree(d));
    return 0;
}

/* Allocate CHUNK bytes at a time through one path until it is refused; free them all. */
static int mode_ceiling(size_t chunk)
{
    static void *ptrs[MAX_CHUNKS];
    static CUdeviceptr dptrs[MAX_CHUNKS];
    static struct vmm vmms[MAX_CHUNKS];
    int n, code;

    for (n = 0, code = 0; n < MAX_CHUNKS && !code; n += !code)
        code = (int)cudaMalloc(&ptrs[n], chunk);
    printf("ceiling cudaMalloc %d %d\n", n, code);
    for (int i = 0; i < n; i++)
        CK_RT(cudaFree(ptrs[i]));
    (void)cudaGetLastError(); /* the refusal is sticky in the runtime's last error only */

    for (n = 0, code = 0; n < MAX_CHUNKS && !code; n += !code)
        code = (int)cudaMallocAsync(&ptrs[n], chunk, 0);
    printf("ceiling cudaMallocAsync %d %d\n", n, code);
    for (int i = 0; i < n; i++)
        CK_RT(cudaFreeAsync(ptrs[i], 0));
    CK_RT(cudaDeviceSynchronize());
    (void)cudaGetLastError();

    for (n = 0, code = 0; n < MAX_CHUNKS && !code; n += !code)
        code = (int)cuMemAlloc(&dptrs[n], chunk);
    printf("ceiling cuMemAlloc %d %d\n", n, code);
    for (int i = 0; i < n; i++)
        CK_DRV(cuMemFree(dptrs[i]));

    for (n = 0, code = 0; n < MAX_CHUNKS && !code; n += !code)
        code = (int)vmm_alloc(&vmms[n], chunk);
    printf("ceiling cuMemCreate %d %d\n", n, code);
    for (int i = 0; i < n; i++)
        vmm_free(&vmms[i]);
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "paths";
    setvbuf(stdout, NULL, _IOLBF, 0);
    CK_RT(cudaSetDevice(0));
    CK_RT(cudaFree(0)); /* the runtime's primary context becomes current for the driver calls */
    size_t f0 = 0, total = 0;
    CK_RT(cudaMemGetInfo(&f0, &total));
    printf("meminfo %zu %zu\n", f0, total);
    if (!strcmp(mode, "paths"))
        return mode_paths();
    if (!strcmp(mode, "ceiling") && argc > 2 && atol(argv[2]) > 0)
        return mode_ceiling((size_t)atol(argv[2]) * MIB);
    fprintf(stderr, "usage: gpu-probe paths | gpu-probe ceiling CHUNK_MIB\n");
    return 2;
}
