/* ceiling-prog: a random program for the ceiling's property test (ceiling_check.py). From a
 * seed, THREADS threads each run OPS random operations over their own live set: allocations
 * through every door (cudaMalloc, cuMemAlloc, cudaMallocAsync, a pool's
 * cudaMallocFromPoolAsync, cuMemCreate + cuMemMap with the handle released at once or at the
 * end), frees, and checks that a buffer still holds the byte it was filled with (a spill and
 * restore must keep it). An allocation refused as out of memory frees one of the thread's
 * buffers instead; a fill or check refused so (no room to bring a spilled buffer back) leaves
 * that buffer unchecked; any other error ends the program with exit 1.
 * Usage: ceiling-prog SEED THREADS OPS [DOORS] (DOORS: a bit mask of enum door, default all) */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#define LIVE_MAX 24
#define KIB      1024ull
#define MIB      (1024ull * 1024ull)

enum door { D_RT, D_DRV, D_ASYNC, D_POOL, D_VMM, D_DOORS };

struct buf {
    uint64_t addr, size;
    CUmemGenericAllocationHandle handle; /* D_VMM; 0 once released */
    enum door door;
    unsigned char fill;
};

struct worker {
    uint64_t rng;
    long ops;
    int id;
    struct buf live[LIVE_MAX];
    int n;
    long allocs, ooms, checks;
};

static cudaMemPool_t pool;
static size_t granule;
static unsigned doors = (1u << D_DOORS) - 1;

static void die(const char *what, int code)
{
    fprintf(stderr, "ceiling-prog: %s failed: %d\n", what, code);
    exit(1);
}

static uint64_t next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Mostly small and odd sizes, some around the 2 MiB granule, a few large. */
static uint64_t pick_size(uint64_t *s)
{
    uint64_t r = next(s) % 100;
    if (r < 50)
        return 256 + next(s) % (192 * KIB);
    if (r < 85)
        return MIB + next(s) % (3 * MIB);
    return 4 * MIB + next(s) % (5 * MIB);
}

static int oom_rt(cudaError_t e)
{
    if (e == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        return 1;
    }
    if (e != cudaSuccess)
        die("runtime allocation", e);
    return 0;
}

static int oom_drv(CUresult r)
{
    if (r == CUDA_ERROR_OUT_OF_MEMORY)
        return 1;
    if (r != CUDA_SUCCESS)
        die("driver allocation", r);
    return 0;
}

static int vmm_alloc(struct buf *b)
{
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    b->size = (b->size + granule - 1) / granule * granule;
    if (oom_drv(cuMemCreate(&b->handle, b->size, &prop, 0)))
        return 1;
    CUdeviceptr va;
    CUresult r = cuMemAddressReserve(&va, b->size, 0, 0, 0);
    if (r != CUDA_SUCCESS)
        die("cuMemAddressReserve", r);
    if ((r = cuMemMap(va, b->size, 0, b->handle, 0)) != CUDA_SUCCESS)
        die("cuMemMap", r);
    CUmemAccessDesc acc = {.location = prop.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    if ((r = cuMemSetAccess(va, b->size, &acc, 1)) != CUDA_SUCCESS)
        die("cuMemSetAccess", r);
    b->addr = va;
    return 0;
}

/* 0 allocated, 1 refused as out of memory. */
static int buf_alloc(struct worker *w, struct buf *b)
{
    void *p = NULL;
    CUdeviceptr d = 0;
    memset(b, 0, sizeof *b);
    do
        b->door = (enum door)(next(&w->rng) % D_DOORS);
    while (!(doors & (1u << b->door)));
    b->size = pick_size(&w->rng);
    b->fill = (unsigned char)(1 + next(&w->rng) % 255);
    switch (b->door) {
    case D_RT:
        if (oom_rt(cudaMalloc(&p, b->size)))
            return 1;
        break;
    case D_DRV:
        if (oom_drv(cuMemAlloc(&d, b->size)))
            return 1;
        p = (void *)(uintptr_t)d;
        break;
    case D_ASYNC:
        if (oom_rt(cudaMallocAsync(&p, b->size, 0)))
            return 1;
        break;
    case D_POOL:
        if (oom_rt(cudaMallocFromPoolAsync(&p, b->size, pool, 0)))
            return 1;
        break;
    default:
        if (vmm_alloc(b))
            return 1;
        p = (void *)(uintptr_t)b->addr;
        /* The CUDA samples' habit: the mapping keeps the memory alive. */
        if (next(&w->rng) % 2) {
            CUresult r = cuMemRelease(b->handle);
            if (r != CUDA_SUCCESS)
                die("cuMemRelease", r);
            b->handle = 0;
        }
    }
    b->addr = (uint64_t)(uintptr_t)p;
    if (oom_rt(cudaMemset(p, b->fill, b->size)))
        b->fill = 0; /* unknown: never checked */
    return 0;
}

static void buf_free(struct buf *b)
{
    void *p = (void *)(uintptr_t)b->addr;
    cudaError_t e = cudaSuccess;
    CUresult r = CUDA_SUCCESS;
    switch (b->door) {
    case D_RT:
        e = cudaFree(p);
        break;
    case D_DRV:
        r = cuMemFree((CUdeviceptr)b->addr);
        break;
    case D_ASYNC:
    case D_POOL:
        e = cudaFreeAsync(p, 0);
        break;
    default:
        if ((r = cuMemUnmap((CUdeviceptr)b->addr, b->size)) == CUDA_SUCCESS)
            r = cuMemAddressFree((CUdeviceptr)b->addr, b->size);
        if (r == CUDA_SUCCESS && b->handle)
            r = cuMemRelease(b->handle);
    }
    if (e != cudaSuccess || r != CUDA_SUCCESS)
        die("free", e != cudaSuccess ? (int)e : (int)r);
}

static void buf_check(struct worker *w, const struct buf *b)
{
    unsigned char got[2];
    if (!b->fill ||
        oom_rt(cudaMemcpy(got, (void *)(uintptr_t)b->addr, 1, cudaMemcpyDeviceToHost)) ||
        oom_rt(cudaMemcpy(got + 1, (void *)(uintptr_t)(b->addr + b->size - 1), 1,
                          cudaMemcpyDeviceToHost)))
        return;
    if (got[0] != b->fill || got[1] != b->fill) {
        fprintf(stderr, "ceiling-prog: buffer %#" PRIx64 " holds %u/%u, filled with %u\n", b->addr,
                got[0], got[1], b->fill);
        exit(1);
    }
    w->checks++;
}

static void drop_one(struct worker *w)
{
    int i = (int)(next(&w->rng) % (uint64_t)w->n);
    buf_free(&w->live[i]);
    w->live[i] = w->live[--w->n];
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    cudaSetDevice(0);
    for (long op = 0; op < w->ops; op++) {
        uint64_t r = next(&w->rng) % 10;
        if (w->n > 0 && (r < 3 || w->n == LIVE_MAX)) {
            drop_one(w);
        } else if (w->n > 0 && r < 5) {
            buf_check(w, &w->live[next(&w->rng) % (uint64_t)w->n]);
        } else if (buf_alloc(w, &w->live[w->n]) == 0) {
            w->n++;
            w->allocs++;
        } else {
            w->ooms++;
            if (w->n > 0)
                drop_one(w);
        }
    }
    while (w->n > 0) {
        buf_check(w, &w->live[w->n - 1]);
        buf_free(&w->live[--w->n]);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: ceiling-prog SEED THREADS OPS [DOORS]\n");
        return 2;
    }
    if (argc == 5)
        doors = (unsigned)strtoul(argv[4], NULL, 0) & ((1u << D_DOORS) - 1);
    if (!doors)
        return 2;
    uint64_t seed = strtoull(argv[1], NULL, 0);
    int nthreads = atoi(argv[2]);
    long ops = atol(argv[3]);
    if (nthreads < 1 || nthreads > 16)
        return 2;
    cudaError_t e = cudaSetDevice(0);
    if (e != cudaSuccess)
        die("cudaSetDevice", e);
    if ((e = cudaDeviceGetDefaultMemPool(&pool, 0)) != cudaSuccess)
        die("cudaDeviceGetDefaultMemPool", e);
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    CUresult r = cuMemGetAllocationGranularity(&granule, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    if (r != CUDA_SUCCESS)
        die("cuMemGetAllocationGranularity", r);
    struct worker w[16];
    pthread_t t[16];
    for (int i = 0; i < nthreads; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].rng = seed * 0x9e3779b97f4a7c15ull + (uint64_t)i * 7919 + 1;
        w[i].ops = ops;
        w[i].id = i;
        if (pthread_create(&t[i], NULL, worker_main, &w[i]) != 0)
            die("pthread_create", 0);
    }
    long allocs = 0, ooms = 0, checks = 0;
    for (int i = 0; i < nthreads; i++) {
        pthread_join(t[i], NULL);
        allocs += w[i].allocs;
        ooms += w[i].ooms;
        checks += w[i].checks;
    }
    if ((e = cudaDeviceSynchronize()) != cudaSuccess)
        die("cudaDeviceSynchronize", e);
    printf("allocs %ld ooms %ld checks %ld\n", allocs, ooms, checks);
    return 0;
}
