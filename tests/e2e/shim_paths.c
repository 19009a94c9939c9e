/* shim-paths: the end-to-end test program of libmemshim's interception layer. It calls every
 * allocation path through every door (exported runtime and driver symbols, dlsym on a
 * libcuda handle, cuGetProcAddress_v2, cudaGetDriverEntryPoint(ByVersion)) and prints what it
 * did, one fact a line, for shim_check.py to hold against the trace and simcuda's stats:
 *
 *     alloc KIND BYTES ADDR      an allocation the shim must record once (KIND as in the trace)
 *     free ADDR                  its free
 *     lookup NAME ok|BAD ...     a lookup handed out the variant it should
 *     path NAME OK CODE          ceiling mode: successes before the refusal, and its code
 *     rc NAME CODE               errors mode: the return code of one bad call
 *     info NAME FREE TOTAL       memory info as the program sees it
 *
 * Without the shim it runs the same way (the lookups then resolve to simcuda itself), so the
 * checker can compare both runs. Usage: shim-paths MODE [ARGS]; see main(). */
#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>

#include <memshim/memshim.h>

#define MIB (1024ull * 1024ull)

static void *libcuda;

static void die(const char *what, int code)
{
    fprintf(stderr, "shim-paths: %s failed: %d\n", what, code);
    exit(1);
}

#define CHECK_RT(call)                                                                             \
    do {                                                                                           \
        cudaError_t r_ = (call);                                                                   \
        if (r_ != cudaSuccess)                                                                     \
            die(#call, r_);                                                                        \
    } while (0)
#define CHECK_DRV(call)                                                                            \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS)                                                                    \
            die(#call, r_);                                                                        \
    } while (0)

static uint64_t plain(uint64_t n)
{
    return (n + 255) & ~255ull;
}

/* make_cudaExtent is in cuda_runtime.h, which is C++-only in places. */
static struct cudaExtent extent(size_t w, size_t h, size_t d)
{
    struct cudaExtent e = {w, h, d};
    return e;
}

static void said_alloc(int kind, uint64_t bytes, uint64_t addr)
{
    printf("alloc %d %" PRIu64 " 0x%" PRIx64 "\n", kind, bytes, addr);
}

static void said_free(uint64_t addr)
{
    printf("free 0x%" PRIx64 "\n", addr);
}

/* --- the driver doors --------------------------------------------------------------------------
 */

typedef CUresult (*proc_fn)(const char *, void **, int, cuuint64_t,
                            CUdriverProcAddressQueryResult *);

/* A lookup must hand out exactly what the global scope defines for that variant's symbol:
 * the shim's wrapper when preloaded, simcuda's function without it. */
static void *expect_variant(const char *door, const char *base, void *got, const char *variant)
{
    void *want = dlsym(RTLD_DEFAULT, variant);
    printf("lookup %s:%s %s %s\n", door, base, got && got == want ? "ok" : "BAD", variant);
    return got;
}

static void *by_procaddr(const char *base, int version, cuuint64_t flags, const char *variant)
{
    proc_fn proc = (proc_fn)dlsym(libcuda, "cuGetProcAddress_v2");
    void *fn = NULL;
    CUdriverProcAddressQueryResult st;
    if (!proc || proc(base, &fn, version, flags, &st) != CUDA_SUCCESS)
        die("cuGetProcAddress_v2", 0);
    return expect_variant("procaddr", base, fn, variant);
}

static void *by_entry_point(const char *base, unsigned long long flags, const char *variant)
{
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult st;
    CHECK_RT(cudaGetDriverEntryPointByVersion(base, &fn, 13000, flags, &st));
    return expect_variant("entrypoint", base, fn, variant);
}

static void *by_dlsym(const char *variant)
{
    return expect_variant("dlsym", variant, dlsym(libcuda, variant), variant);
}

/* Every door for one driver function: linked (the program's own PLT), dlsym on the libcuda
 * handle, cuGetProcAddress_v2, and the runtime's entry-point lookup. */
struct doors {
    void *fn[4];
};

static struct doors doors_of(void *linked, const char *base, const char *variant, int ptds)
{
    cuuint64_t f = ptds ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : 0;
    struct doors d = {{linked, by_dlsym(variant), by_procaddr(base, 13000, f, variant),
                       by_entry_point(base, ptds ? cudaEnablePerThreadDefaultStream : 0, variant)}};
    return d;
}

/* --- paths mode: every allocation path once through every door ------------------------------ */

/* The per-thread-default-stream exports, as a program built with --default-stream per-thread
 * links them (cuda_runtime_api.h only names them under CUDA_API_PER_THREAD_DEFAULT_STREAM). */
static void runtime_ptsz_paths(cudaMemPool_t pool)
{
    cudaError_t (*alloc)(void **, size_t, cudaStream_t) =
        (cudaError_t(*)(void **, size_t, cudaStream_t))dlsym(RTLD_DEFAULT, "cudaMallocAsync_ptsz");
    cudaError_t (*from_pool)(void **, size_t, cudaMemPool_t, cudaStream_t) =
        (cudaError_t(*)(void **, size_t, cudaMemPool_t, cudaStream_t))dlsym(
            RTLD_DEFAULT, "cudaMallocFromPoolAsync_ptsz");
    cudaError_t (*release)(void *, cudaStream_t) =
        (cudaError_t(*)(void *, cudaStream_t))dlsym(RTLD_DEFAULT, "cudaFreeAsync_ptsz");
    void *p;
    if (!alloc || !from_pool || !release)
        die("dlsym of the runtime's _ptsz exports", 0);
    CHECK_RT(alloc(&p, 7000, 0));
    said_alloc(5, plain(7000), (uintptr_t)p);
    said_free((uintptr_t)p);
    CHECK_RT(release(p, 0));
    CHECK_RT(from_pool(&p, 8000, pool, 0));
    said_alloc(6, plain(8000), (uintptr_t)p);
    said_free((uintptr_t)p);
    CHECK_RT(release(p, 0));
}

static void runtime_paths(void)
{
    void *p;
    size_t pitch;
    CHECK_RT(cudaMalloc(&p, 1000));
    said_alloc(1, plain(1000), (uintptr_t)p);
    said_free((uintptr_t)p);
    CHECK_RT(cudaFree(p));
    CHECK_RT(cudaMallocPitch(&p, &pitch, 1000, 7));
    said_alloc(2, pitch * 7, (uintptr_t)p);
    said_free((uintptr_t)p);
    CHECK_RT(cudaFree(p));
    struct cudaPitchedPtr pp;
    CHECK_RT(cudaMalloc3D(&pp, extent(700, 5, 3)));
    said_alloc(3, pp.pitch * 15, (uintptr_t)pp.ptr);
    said_free((uintptr_t)pp.ptr);
    CHECK_RT(cudaFree(pp.ptr));
    CHECK_RT(cudaMallocManaged(&p, 3000, cudaMemAttachGlobal));
    said_alloc(4, plain(3000), (uintptr_t)p);
    said_free((uintptr_t)p);
    CHECK_RT(cudaFree(p));
    CHECK_RT(cudaMallocAsync(&p, 5000, 0));
    said_alloc(5, plain(5000), (uintptr_t)p);
    said_free((uintptr_t)p);
    CHECK_RT(cudaFreeAsync(p, 0));
    cudaMemPool_t pool;
    CHECK_DRV(cuDeviceGetDefaultMemPool((CUmemoryPool *)&pool, 0));
    CHECK_RT(cudaMallocFromPoolAsync(&p, 6000, pool, 0));
    said_alloc(6, plain(6000), (uintptr_t)p);
    said_free((uintptr_t)p);
    CHECK_RT(cudaFreeAsync(p, 0));
    runtime_ptsz_paths(pool);
}

typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*free_fn)(CUdeviceptr);
typedef CUresult (*pitch_fn)(CUdeviceptr *, size_t *, size_t, size_t, unsigned);
typedef CUresult (*managed_fn)(CUdeviceptr *, size_t, unsigned);
typedef CUresult (*async_fn)(CUdeviceptr *, size_t, CUstream);
typedef CUresult (*pool_fn)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
typedef CUresult (*free_async_fn)(CUdeviceptr, CUstream);

static void driver_plain(const struct doors *a, const struct doors *f)
{
    for (int i = 0; i < 4; i++) {
        CUdeviceptr p;
        CHECK_DRV(((alloc_fn)a->fn[i])(&p, 1111 + i));
        said_alloc(7, plain(1111 + i), p);
        said_free(p);
        CHECK_DRV(((free_fn)f->fn[i])(p));
    }
}

static void driver_pitch_managed(const struct doors *pd, const struct doors *md,
                                 const struct doors *f)
{
    for (int i = 0; i < 4; i++) {
        CUdeviceptr p;
        size_t pitch;
        CHECK_DRV(((pitch_fn)pd->fn[i])(&p, &pitch, 900 + i, 3, 4));
        said_alloc(8, pitch * 3, p);
        said_free(p);
        CHECK_DRV(((free_fn)f->fn[i])(p));
        CHECK_DRV(((managed_fn)md->fn[i])(&p, 2222 + i, CU_MEM_ATTACH_GLOBAL));
        said_alloc(9, plain(2222 + i), p);
        said_free(p);
        CHECK_DRV(((free_fn)f->fn[i])(p));
    }
}

static void driver_async(const struct doors *ad, const struct doors *pd, const struct doors *fd)
{
    CUmemoryPool pool;
    CHECK_DRV(cuDeviceGetDefaultMemPool(&pool, 0));
    for (int i = 0; i < 4; i++) {
        CUdeviceptr p;
        CHECK_DRV(((async_fn)ad->fn[i])(&p, 3333 + i, 0));
        said_alloc(10, plain(3333 + i), p);
        said_free(p);
        CHECK_DRV(((free_async_fn)fd->fn[i])(p, 0));
        CHECK_DRV(((pool_fn)pd->fn[i])(&p, 4444 + i, pool, 0));
        said_alloc(11, plain(4444 + i), p);
        said_free(p);
        CHECK_DRV(((free_async_fn)fd->fn[i])(p, 0));
    }
}

static CUmemAllocationProp vmm_prop(CUmemLocationType type)
{
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = type;
    prop.location.id = 0;
    return prop;
}

typedef CUresult (*create_fn)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                              unsigned long long);
typedef CUresult (*release_fn)(CUmemGenericAllocationHandle);
typedef CUresult (*map_fn)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                           unsigned long long);
typedef CUresult (*unmap_fn)(CUdeviceptr, size_t);

/* Physical memory through each door, mapped into a reserved range and unmapped again. */
static void driver_vmm(const struct doors *c, const struct doors *r, const struct doors *m,
                       const struct doors *u)
{
    CUmemAllocationProp prop = vmm_prop(CU_MEM_LOCATION_TYPE_DEVICE);
    size_t g;
    CHECK_DRV(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    for (int i = 0; i < 4; i++) {
        CUmemGenericAllocationHandle h;
        CUdeviceptr va;
        CHECK_DRV(((create_fn)c->fn[i])(&h, 2 * g, &prop, 0));
        said_alloc(12, 2 * g, h);
        CHECK_DRV(cuMemAddressReserve(&va, 2 * g, 0, 0, 0));
        CHECK_DRV(((map_fn)m->fn[i])(va, 2 * g, 0, h, 0));
        printf("map 0x%llx %zu 0x%llx\n", (unsigned long long)va, 2 * g, (unsigned long long)h);
        CHECK_DRV(((unmap_fn)u->fn[i])(va, 2 * g));
        CHECK_DRV(cuMemAddressFree(va, 2 * g));
        said_free(h);
        CHECK_DRV(((release_fn)r->fn[i])(h));
    }
    /* Host-located physical memory is recorded, never charged. */
    prop = vmm_prop(CU_MEM_LOCATION_TYPE_HOST);
    CUmemGenericAllocationHandle h;
    CHECK_DRV(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CHECK_DRV(cuMemCreate(&h, g, &prop, 0));
    said_alloc(12, 0, h);
    said_free(h);
    CHECK_DRV(cuMemRelease(h));
}

#define DOORS(fn, base, ptds) doors_of((void *)fn, base, #fn, ptds)

static void driver_paths(void)
{
    struct doors alloc = DOORS(cuMemAlloc_v2, "cuMemAlloc", 0);
    struct doors fr = DOORS(cuMemFree_v2, "cuMemFree", 0);
    driver_plain(&alloc, &fr);
    struct doors pitch = DOORS(cuMemAllocPitch_v2, "cuMemAllocPitch", 0);
    struct doors managed = DOORS(cuMemAllocManaged, "cuMemAllocManaged", 0);
    driver_pitch_managed(&pitch, &managed, &fr);
    struct doors as = DOORS(cuMemAllocAsync, "cuMemAllocAsync", 0);
    struct doors pool = DOORS(cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", 0);
    struct doors fas = DOORS(cuMemFreeAsync, "cuMemFreeAsync", 0);
    driver_async(&as, &pool, &fas);
    extern CUresult cuMemAllocAsync_ptsz(CUdeviceptr *, size_t, CUstream);
    extern CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
    extern CUresult cuMemFreeAsync_ptsz(CUdeviceptr, CUstream);
    struct doors as_pt = DOORS(cuMemAllocAsync_ptsz, "cuMemAllocAsync", 1);
    struct doors pool_pt = DOORS(cuMemAllocFromPoolAsync_ptsz, "cuMemAllocFromPoolAsync", 1);
    struct doors fas_pt = DOORS(cuMemFreeAsync_ptsz, "cuMemFreeAsync", 1);
    driver_async(&as_pt, &pool_pt, &fas_pt);
    struct doors create = DOORS(cuMemCreate, "cuMemCreate", 0);
    struct doors release = DOORS(cuMemRelease, "cuMemRelease", 0);
    struct doors map = DOORS(cuMemMap, "cuMemMap", 0);
    struct doors unmap = DOORS(cuMemUnmap, "cuMemUnmap", 0);
    driver_vmm(&create, &release, &map, &unmap);
}

typedef cudaError_t (*entry_fn)(const char *, void **, unsigned long long,
                                enum cudaDriverEntryPointQueryResult *);
typedef cudaError_t (*entry_version_fn)(const char *, void **, unsigned int, unsigned long long,
                                        enum cudaDriverEntryPointQueryResult *);

/* The runtime's other entry-point lookups: the deprecated one without a version, and the
 * _ptsz exports, whose default flavour is per-thread. */
static void runtime_lookup_paths(void)
{
    static const char *const names[4] = {"cudaGetDriverEntryPoint", "cudaGetDriverEntryPoint_ptsz",
                                         "cudaGetDriverEntryPointByVersion",
                                         "cudaGetDriverEntryPointByVersion_ptsz"};
    for (int i = 0; i < 4; i++) {
        void *lookup = dlsym(RTLD_DEFAULT, names[i]), *fn = NULL;
        enum cudaDriverEntryPointQueryResult st;
        if (!lookup)
            die(names[i], 0);
        if (i < 2)
            CHECK_RT(((entry_fn)lookup)("cuMemAllocAsync", &fn, 0, &st));
        else
            CHECK_RT(((entry_version_fn)lookup)("cuMemAllocAsync", &fn, 12000, 0, &st));
        expect_variant(names[i], "cuMemAllocAsync", fn,
                       i % 2 ? "cuMemAllocAsync_ptsz" : "cuMemAllocAsync");
    }
}

/* Lookups that must resolve to the lookup functions themselves or pass through. */
static void lookup_paths(void)
{
    runtime_lookup_paths();
    by_procaddr("cuGetProcAddress", 13000, 0, "cuGetProcAddress_v2");
    by_procaddr("cuGetProcAddress", 11030, 0, "cuGetProcAddress");
    by_procaddr("cuMemGetInfo", 13000, 0, "cuMemGetInfo_v2");
    by_dlsym("cuGetProcAddress_v2");
    /* A function we do not wrap comes from simcuda itself. */
    void *fn = NULL;
    proc_fn proc = (proc_fn)dlsym(libcuda, "cuGetProcAddress_v2");
    proc("cuDeviceGetCount", &fn, 13000, 0, NULL);
    Dl_info info;
    int real = fn && dladdr(fn, &info) && strstr(info.dli_fname, "libmemshim") == NULL &&
               fn == dlsym(libcuda, "cuDeviceGetCount");
    printf("lookup passthrough:cuDeviceGetCount %s\n", real ? "ok" : "BAD");
}

static int mode_paths(void)
{
    runtime_paths();
    driver_paths();
    lookup_paths();
    return 0;
}

/* --- ceiling mode: allocate STEP-byte blocks through one path until it refuses ------------- */

#define CEIL_BLOCKS 64

struct ceiling_path {
    const char *name;
    int (*alloc)(uint64_t *addr, size_t bytes); /* returns the API's code */
    void (*release)(uint64_t addr);
};

static int c_malloc(uint64_t *a, size_t n)
{
    return cudaMalloc((void **)a, n);
}
static int c_pitch(uint64_t *a, size_t n)
{
    size_t pitch;
    return cudaMallocPitch((void **)a, &pitch, n / 64, 64);
}
static int c_3d(uint64_t *a, size_t n)
{
    struct cudaPitchedPtr pp;
    int r = cudaMalloc3D(&pp, extent(n / 64, 8, 8));
    *a = (uintptr_t)pp.ptr;
    return r;
}
static int c_managed(uint64_t *a, size_t n)
{
    return cudaMallocManaged((void **)a, n, cudaMemAttachGlobal);
}
static int c_async(uint64_t *a, size_t n)
{
    return cudaMallocAsync((void **)a, n, 0);
}
static int c_pool(uint64_t *a, size_t n)
{
    CUmemoryPool pool;
    cuDeviceGetDefaultMemPool(&pool, 0);
    return cudaMallocFromPoolAsync((void **)a, n, (cudaMemPool_t)pool, 0);
}
static void c_free(uint64_t a)
{
    cudaFree((void *)(uintptr_t)a);
}
static void c_free_async(uint64_t a)
{
    cudaFreeAsync((void *)(uintptr_t)a, 0);
}
static int d_alloc(uint64_t *a, size_t n)
{
    return cuMemAlloc_v2((CUdeviceptr *)a, n);
}
static int d_alloc_proc(uint64_t *a, size_t n)
{
    static alloc_fn fn;
    proc_fn proc = (proc_fn)dlsym(libcuda, "cuGetProcAddress_v2");
    if (!fn)
        proc("cuMemAlloc", (void **)&fn, 13000, 0, NULL);
    return fn((CUdeviceptr *)a, n);
}
static int d_alloc_dlsym(uint64_t *a, size_t n)
{
    return ((alloc_fn)dlsym(libcuda, "cuMemAlloc_v2"))((CUdeviceptr *)a, n);
}
static int d_pitch(uint64_t *a, size_t n)
{
    size_t pitch;
    return cuMemAllocPitch_v2((CUdeviceptr *)a, &pitch, n / 64, 64, 4);
}
static int d_managed(uint64_t *a, size_t n)
{
    return cuMemAllocManaged((CUdeviceptr *)a, n, CU_MEM_ATTACH_GLOBAL);
}
static int d_async(uint64_t *a, size_t n)
{
    return cuMemAllocAsync((CUdeviceptr *)a, n, 0);
}
static int d_pool(uint64_t *a, size_t n)
{
    CUmemoryPool pool;
    cuDeviceGetDefaultMemPool(&pool, 0);
    return cuMemAllocFromPoolAsync((CUdeviceptr *)a, n, pool, 0);
}
static void d_free(uint64_t a)
{
    cuMemFree_v2(a);
}
static void d_free_async(uint64_t a)
{
    cuMemFreeAsync(a, 0);
}
static int d_create(uint64_t *a, size_t n)
{
    CUmemAllocationProp prop = vmm_prop(CU_MEM_LOCATION_TYPE_DEVICE);
    return cuMemCreate((CUmemGenericAllocationHandle *)a, n, &prop, 0);
}
static void d_release(uint64_t a)
{
    cuMemRelease(a);
}

static const struct ceiling_path ceiling_paths[] = {
    {"cudaMalloc", c_malloc, c_free},
    {"cudaMallocPitch", c_pitch, c_free},
    {"cudaMalloc3D", c_3d, c_free},
    {"cudaMallocManaged", c_managed, c_free},
    {"cudaMallocAsync", c_async, c_free_async},
    {"cudaMallocFromPoolAsync", c_pool, c_free_async},
    {"cuMemAlloc_v2", d_alloc, d_free},
    {"cuMemAlloc:procaddr", d_alloc_proc, d_free},
    {"cuMemAlloc_v2:dlsym", d_alloc_dlsym, d_free},
    {"cuMemAllocPitch_v2", d_pitch, d_free},
    {"cuMemAllocManaged", d_managed, d_free},
    {"cuMemAllocAsync", d_async, d_free_async},
    {"cuMemAllocFromPoolAsync", d_pool, d_free_async},
    {"cuMemCreate", d_create, d_release},
};

/* Each path allocates blocks of `block` bytes until it fails, then frees them all. */
static int mode_ceiling(size_t block)
{
    for (size_t i = 0; i < sizeof ceiling_paths / sizeof ceiling_paths[0]; i++) {
        const struct ceiling_path *p = &ceiling_paths[i];
        uint64_t addr[CEIL_BLOCKS];
        int n = 0, rc = 0;
        while (n < CEIL_BLOCKS && (rc = p->alloc(&addr[n], block)) == 0)
            n++;
        printf("path %s %d %d\n", p->name, n, rc);
        while (n > 0)
            p->release(addr[--n]);
    }
    return 0;
}

/* --- memory info ----------------------------------------------------------------------------- */

static int mode_meminfo(size_t hold)
{
    void *p = NULL;
    size_t f = 0, t = 0;
    if (hold)
        CHECK_RT(cudaMalloc(&p, hold));
    CHECK_RT(cudaMemGetInfo(&f, &t));
    printf("info cudaMemGetInfo %zu %zu\n", f, t);
    f = t = 0;
    CHECK_DRV(cuMemGetInfo_v2(&f, &t));
    printf("info cuMemGetInfo_v2 %zu %zu\n", f, t);
    if (p)
        CHECK_RT(cudaFree(p));
    return 0;
}

/* --- threads: alloc/free pairs from many threads at once ------------------------------------- */

static long thread_pairs;

static void *thread_main(void *arg)
{
    long id = (long)(intptr_t)arg;
    CHECK_RT(cudaSetDevice(0));
    for (long i = 0; i < thread_pairs; i++) {
        void *p;
        size_t n = 256 * (size_t)(1 + (id + i) % 7);
        CHECK_RT(cudaMalloc(&p, n));
        CHECK_RT(cudaFree(p));
    }
    return NULL;
}

static int mode_threads(int nthreads, long pairs)
{
    pthread_t t[64];
    uint64_t bytes = 0;
    thread_pairs = pairs;
    for (int i = 0; i < nthreads && i < 64; i++)
        pthread_create(&t[i], NULL, thread_main, (void *)(intptr_t)i);
    for (int i = 0; i < nthreads && i < 64; i++)
        pthread_join(t[i], NULL);
    for (long id = 0; id < nthreads; id++)
        for (long i = 0; i < pairs; i++)
            bytes += 256 * (uint64_t)(1 + (id + i) % 7);
    printf("threads %d %ld %" PRIu64 "\n", nthreads, pairs, bytes);
    return 0;
}

/* --- fork: the child writes its own trace ---------------------------------------------------- */

static int mode_fork(void)
{
    void *a, *b, *c;
    CHECK_RT(cudaMalloc(&a, 1 * MIB));
    printf("parent-alloc 0x%" PRIxPTR "\n", (uintptr_t)a);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        CHECK_RT(cudaMalloc(&b, 2 * MIB));
        printf("child %d alloc 0x%" PRIxPTR "\n", (int)getpid(), (uintptr_t)b);
        CHECK_RT(cudaFree(b));
        exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    CHECK_RT(cudaMalloc(&c, 3 * MIB));
    printf("parent %d alloc 0x%" PRIxPTR " child-status %d\n", (int)getpid(), (uintptr_t)c, status);
    CHECK_RT(cudaFree(c));
    CHECK_RT(cudaFree(a));
    return 0;
}

/* --- kill: SIGKILL after a flush leaves a trace readable up to it ---------------------------- */

static int mode_kill(int flushed, int more)
{
    void *p;
    for (int i = 0; i < flushed; i++)
        CHECK_RT(cudaMalloc(&p, 4096));
    MEMSHIM_TAG_PUSH("input"); /* any API call: proves the library is there */
    MEMSHIM_TAG_POP();
    if (memshim_flush)
        memshim_flush();
    for (int i = 0; i < more; i++)
        CHECK_RT(cudaMalloc(&p, 4096));
    printf("killing\n");
    fflush(stdout);
    raise(SIGKILL);
    return 1;
}

/* --- errors: bad arguments and unknown pointers, whose codes must not change ---------------- */

static int mode_errors(void)
{
    size_t s = 0;
    CUdeviceptr d;
    CUmemGenericAllocationHandle h;
    CUmemAllocationProp prop = vmm_prop(CU_MEM_LOCATION_TYPE_DEVICE);
    printf("rc cudaMalloc:null %d\n", cudaMalloc(NULL, 256));
    printf("rc cudaMallocPitch:null-pitch %d\n", cudaMallocPitch((void **)&d, NULL, 256, 2));
    printf("rc cudaMemGetInfo:null %d\n", cudaMemGetInfo(NULL, NULL));
    printf("rc cudaFree:unknown %d\n", cudaFree((void *)(uintptr_t)0x1234000));
    printf("rc cudaFreeAsync:unknown %d\n", cudaFreeAsync((void *)(uintptr_t)0x1234000, 0));
    printf("rc cudaFree:null %d\n", cudaFree(NULL));
    printf("rc cuMemAlloc_v2:null %d\n", cuMemAlloc_v2(NULL, 256));
    printf("rc cuMemAlloc_v2:zero %d\n", cuMemAlloc_v2(&d, 0));
    printf("rc cuMemAllocPitch_v2:null %d\n", cuMemAllocPitch_v2(&d, NULL, 256, 2, 4));
    printf("rc cuMemFree_v2:unknown %d\n", cuMemFree_v2(0x1234000));
    printf("rc cuMemFreeAsync:unknown %d\n", cuMemFreeAsync(0x1234000, 0));
    printf("rc cuMemGetInfo_v2:null %d\n", cuMemGetInfo_v2(NULL, NULL));
    printf("rc cuMemGetInfo_v2:free-only %d\n", cuMemGetInfo_v2(&s, NULL));
    printf("rc cuMemGetInfo_v2:total-only %d\n", cuMemGetInfo_v2(NULL, &s)); /* HAMi-core #234 */
    printf("rc cuMemCreate:null-handle %d\n", cuMemCreate(NULL, 2 * MIB, &prop, 0));
    printf("rc cuMemCreate:null-prop %d\n", cuMemCreate(&h, 2 * MIB, NULL, 0));
    printf("rc cuMemCreate:unaligned %d\n", cuMemCreate(&h, 12345, &prop, 0));
    printf("rc cuMemRelease:unknown %d\n", cuMemRelease(0x777));
    printf("rc cuMemMap:unknown %d\n", cuMemMap(0x1234000, 2 * MIB, 0, 0x777, 0));
    printf("rc cuMemUnmap:unknown %d\n", cuMemUnmap(0x1234000, 2 * MIB));
    void *fn = (void *)1;
    proc_fn proc = (proc_fn)dlsym(libcuda, "cuGetProcAddress_v2");
    printf("rc cuGetProcAddress_v2:unknown-name %d %s\n",
           proc("cuNoSuchThing", &fn, 13000, 0, NULL), fn ? "non-null" : "null");
    printf("rc cuGetProcAddress_v2:null-pfn %d\n", proc("cuMemAlloc", NULL, 13000, 0, NULL));
    printf("rc cuGetProcAddress_v2:future %d\n", proc("cuMemAlloc", &fn, 99000, 0, NULL));
    printf("rc dlsym:missing %s\n", dlsym(libcuda, "cuNoSuchThing") ? "non-null" : "null");
    return 0;
}

/* --- categories: NVTX ranges, the app API, rules, built-ins ---------------------------------- */

static void alloc_free(int kind, size_t n)
{
    void *p;
    CHECK_RT(cudaMalloc(&p, n));
    said_alloc(kind, plain(n), (uintptr_t)p);
    CHECK_RT(cudaFree(p));
}

/* An unmodified program's NVTX ranges, plain and in a domain with a registered string. */
static int mode_nvtx(void)
{
    nvtxRangePushA("optimizer");
    alloc_free(1, 1 * MIB);
    nvtxRangePop();
    nvtxDomainHandle_t dom = nvtxDomainCreateA("shim-paths");
    nvtxEventAttributes_t attr = {0};
    attr.version = NVTX_VERSION;
    attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attr.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    attr.message.registered = nvtxDomainRegisterStringA(dom, "forward");
    nvtxDomainRangePushEx(dom, &attr);
    alloc_free(1, 2 * MIB);
    nvtxDomainRangePop(dom);
    nvtxRangeId_t id = nvtxRangeStartA("backward");
    alloc_free(1, 3 * MIB);
    nvtxRangeEnd(id);
    alloc_free(1, 4 * MIB);
    return 0;
}

static int mode_api(void)
{
    printf("tag %d\n", MEMSHIM_TAG_PUSH("kv_cache"));
    alloc_free(1, 1 * MIB);
    MEMSHIM_TAG_POP();
    printf("tag %d\n", MEMSHIM_TAG_PUSH("no-such-category"));
    MEMSHIM_STEP_BEGIN(7);
    alloc_free(1, 2 * MIB);
    return 0;
}

/* Named in the rules test's MEMSHIM_RULES file; exported (-rdynamic) so dladdr names it. */
__attribute__((noinline)) void shim_paths_rule_site(void)
{
    alloc_free(1, 5 * MIB);
    __asm__ volatile("" ::: "memory"); /* keep the frame: no tail call */
}

static int mode_rules(void)
{
    shim_paths_rule_site();
    alloc_free(1, 6 * MIB);
    return 0;
}

/* Two callers that reach one allocation with the stack at the same depth: the shim's memory of
 * known stacks (keyed by where its unwinder starts) must still tell them apart, and so must a
 * caller's own stack, which changes between its two calls further out. Exported, for names. */
__attribute__((noinline)) void shim_paths_stack_leaf(int kind, size_t n)
{
    printf("leaf %d %#lx\n", kind, (unsigned long)(uintptr_t)__builtin_frame_address(0));
    alloc_free(kind, n);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void shim_paths_stack_mid(int kind, size_t n)
{
    shim_paths_stack_leaf(kind, n);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void shim_paths_stack_a(size_t n)
{
    shim_paths_stack_mid(1, n);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void shim_paths_stack_b(size_t n)
{
    shim_paths_stack_mid(1, n);
    __asm__ volatile("" ::: "memory");
}

static int mode_stacks(long rounds)
{
    for (long i = 0; i < rounds; i++) {
        shim_paths_stack_a(1 * MIB);
        shim_paths_stack_b(2 * MIB);
    }
    return 0;
}

/* simcuda's cuBLAS allocates its workspace through the driver entry points at create. */
static int mode_cublas(void)
{
    void *lib = dlopen("libcublas.so.13", RTLD_NOW | RTLD_LOCAL);
    int (*create)(void **) = lib ? (int (*)(void **))dlsym(lib, "cublasCreate_v2") : NULL;
    int (*destroy)(void *) = lib ? (int (*)(void *))dlsym(lib, "cublasDestroy_v2") : NULL;
    void *handle;
    if (!lib)
        fprintf(stderr, "shim-paths: %s\n", dlerror());
    if (!create || !destroy || create(&handle) != 0)
        die("cublasCreate_v2", 0);
    printf("cublas created\n");
    destroy(handle);
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "paths";
    setvbuf(stdout, NULL, _IOLBF, 0);
    libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!libcuda)
        die("dlopen libcuda.so.1", 0);
    /* meminfo's first CUDA call is its cudaMalloc: the shim must describe the device (for a
     * percentage ceiling) before the runtime has initialised the driver. */
    if (strcmp(mode, "errors") != 0 && strcmp(mode, "meminfo") != 0)
        CHECK_RT(cudaSetDevice(0));
    if (strcmp(mode, "meminfo") != 0)
        CHECK_RT(cudaFree(0)); /* the runtime's context becomes current for the driver calls */
    long a1 = argc > 2 ? atol(argv[2]) : 0, a2 = argc > 3 ? atol(argv[3]) : 0;
    if (!strcmp(mode, "paths"))
        return mode_paths();
    if (!strcmp(mode, "ceiling"))
        return mode_ceiling((size_t)a1);
    if (!strcmp(mode, "meminfo"))
        return mode_meminfo((size_t)a1);
    if (!strcmp(mode, "threads"))
        return mode_threads((int)a1, a2);
    if (!strcmp(mode, "fork"))
        return mode_fork();
    if (!strcmp(mode, "kill"))
        return mode_kill((int)a1, (int)a2);
    if (!strcmp(mode, "errors"))
        return mode_errors();
    if (!strcmp(mode, "nvtx"))
        return mode_nvtx();
    if (!strcmp(mode, "api"))
        return mode_api();
    if (!strcmp(mode, "rules"))
        return mode_rules();
    if (!strcmp(mode, "cublas"))
        return mode_cublas();
    if (!strcmp(mode, "stacks"))
        return mode_stacks(a1);
    fprintf(stderr, "shim-paths: unknown mode %s\n", mode);
    return 2;
}
