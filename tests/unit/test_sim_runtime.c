/* simcuda's libcudart.so.13 on top of the simulated driver (build/simcuda/libcuda.so.1 via
 * LD_LIBRARY_PATH). The device has 256 MiB here (SIMCUDA_DEVICE_MEMORY in sim_runtime.cmake) so
 * that out-of-memory is reached quickly. Criterion runs every test in its own process, so each
 * one also exercises the runtime's lazy initialization. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "simcuda.h"

#define MIB          ((size_t)1 << 20)
#define DEVICE_BYTES (256 * MIB)

/* Declared by cuda_runtime_api.h only for per-thread-default-stream builds. */
cudaError_t cudaMemcpy_ptds(void *, const void *, size_t, enum cudaMemcpyKind);
cudaError_t cudaMemsetAsync_ptsz(void *, int, size_t, cudaStream_t);
cudaError_t cudaLaunchKernel_ptsz(const void *, dim3, dim3, void **, size_t, cudaStream_t);
cudaError_t cudaMallocAsync_ptsz(void **, size_t, cudaStream_t);
cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char *, void **, unsigned int,
                                                  unsigned long long,
                                                  enum cudaDriverEntryPointQueryResult *);
cudaError_t __cudaGetKernel(cudaKernel_t *, const void *);
cudaError_t __cudaLaunchKernel(cudaKernel_t, dim3, dim3, void **, size_t, cudaStream_t);

#define CHECK(call) cr_assert_eq((call), cudaSuccess, "%s", #call)

/* ---- linkage ---- */

/* True when the loaded object whose path contains name was linked -Bsymbolic. */
static int symbolic_callback(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    const char **name = data;
    if (!strstr(info->dlpi_name, name[0]))
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        if (info->dlpi_phdr[i].p_type != PT_DYNAMIC)
            continue;
        const ElfW(Dyn) *dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
        for (; dyn->d_tag != DT_NULL; dyn++)
            if (dyn->d_tag == DT_SYMBOLIC)
                return 1;
    }
    return 2;
}

/* As the real libcudart (DT_SYMBOLIC): the runtime's calls to its own exports (cudaMallocHost ->
 * cudaHostAlloc, cudaMalloc3D -> cudaMallocPitch) bind inside the library, so a preloaded shim
 * sees each program call once. */
Test(sim_runtime, runtime_binds_its_own_symbols)
{
    const char *name[] = {"libcudart.so.13"};
    cr_assert_eq(dl_iterate_phdr(symbolic_callback, name), 1);
}

/* ---- device ---- */

Test(sim_runtime, driver_is_loaded_lazily_not_linked)
{
    cr_assert_null(dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD));
    CHECK(cudaFree(NULL));
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    cr_assert_not_null(h);
    dlclose(h);
}

Test(sim_runtime, devices_and_properties)
{
    int count = 0, dev = -1, value = 0, version = 0;
    CHECK(cudaGetDeviceCount(&count));
    cr_assert_geq(count, 1);
    CHECK(cudaSetDevice(0));
    CHECK(cudaGetDevice(&dev));
    cr_assert_eq(dev, 0);
    cr_assert_eq(cudaSetDevice(count), cudaErrorInvalidDevice);
    cr_assert_eq(cudaGetLastError(), cudaErrorInvalidDevice);
    cr_assert_eq(cudaGetLastError(), cudaSuccess);
    struct cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    cr_assert_str_eq(prop.name, "simcuda");
    cr_assert_eq(prop.major, 9);
    cr_assert_eq(prop.minor, 0);
    cr_assert_eq(prop.totalGlobalMem, DEVICE_BYTES);
    cr_assert_gt(prop.warpSize, 0);
    CHECK(cudaDeviceGetAttribute(&value, cudaDevAttrComputeCapabilityMajor, 0));
    cr_assert_eq(value, 9);
    cr_assert_eq(cudaDeviceGetAttribute(&value, cudaDevAttrComputeCapabilityMajor, count),
                 cudaErrorInvalidDevice);
    CHECK(cudaRuntimeGetVersion(&version));
    cr_assert_eq(version, 13000);
    CHECK(cudaDriverGetVersion(&version));
    cr_assert_geq(version, 13000);
    CHECK(cudaDeviceSynchronize());
}

/* ---- memory ---- */

Test(sim_runtime, malloc_memcpy_every_kind)
{
    enum { N = 1000 };
    int host[N], back[N], copy[N];
    for (int i = 0; i < N; i++)
        host[i] = i * 7 - 3;
    int *a = NULL, *b = NULL;
    CHECK(cudaMalloc((void **)&a, sizeof host));
    CHECK(cudaMalloc((void **)&b, sizeof host));
    cr_assert_not_null(a);
    CHECK(cudaMemcpy(a, host, sizeof host, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(b, a, sizeof host, cudaMemcpyDeviceToDevice));
    CHECK(cudaMemcpy(back, b, sizeof host, cudaMemcpyDeviceToHost));
    cr_assert_arr_eq(back, host, sizeof host);
    memset(back, 0, sizeof back);
    CHECK(cudaMemcpy(b, host, sizeof host, cudaMemcpyDefault));
    CHECK(cudaMemcpy(back, b, sizeof host, cudaMemcpyDefault));
    cr_assert_arr_eq(back, host, sizeof host);
    CHECK(cudaMemcpy(copy, host, sizeof host, cudaMemcpyHostToHost));
    cr_assert_arr_eq(copy, host, sizeof host);
    memset(back, 0, sizeof back);
    CHECK(cudaMemcpy_ptds(back, a, sizeof host, cudaMemcpyDeviceToHost));
    cr_assert_arr_eq(back, host, sizeof host);
    cr_assert_eq(cudaMemcpy(back, a, sizeof host, (enum cudaMemcpyKind)9),
                 cudaErrorInvalidMemcpyDirection);
    CHECK(cudaMemcpy(back, a, 0, cudaMemcpyDeviceToHost));
    CHECK(cudaFree(a));
    CHECK(cudaFree(b));
    CHECK(cudaFree(NULL));
    /* CUDA_ERROR_INVALID_VALUE from the driver arrives as cudaErrorInvalidValue. */
    cr_assert_eq(cudaFree(a), cudaErrorInvalidValue);
    cr_assert_eq(cudaGetLastError(), cudaErrorInvalidValue);
}

Test(sim_runtime, async_copies_and_memset_on_streams)
{
    enum { N = 4096 };
    static unsigned char host[N], back[N];
    for (int i = 0; i < N; i++)
        host[i] = (unsigned char)(i * 31);
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    unsigned char *d;
    CHECK(cudaMallocAsync((void **)&d, N, s));
    CHECK(cudaMemcpyAsync(d, host, N, cudaMemcpyHostToDevice, s));
    CHECK(cudaMemsetAsync(d + 100, 0xab, 50, s));
    CHECK(cudaMemcpyAsync(back, d, N, cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    for (int i = 0; i < N; i++)
        cr_assert_eq(back[i], (i >= 100 && i < 150) ? 0xab : host[i], "byte %d", i);
    CHECK(cudaMemset(d, 7, N));
    CHECK(cudaMemsetAsync_ptsz(d, 9, 10, 0));
    CHECK(cudaMemcpy(back, d, N, cudaMemcpyDeviceToHost));
    cr_assert_eq(back[0], 9);
    cr_assert_eq(back[10], 7);
    unsigned char *d2;
    CHECK(cudaMallocAsync((void **)&d2, N, s));
    CHECK(cudaMemcpyAsync(d2, d, N, cudaMemcpyDeviceToDevice, s));
    CHECK(cudaMemcpyAsync(back, d2, N, cudaMemcpyDefault, s));
    CHECK(cudaMemcpyAsync(back + 1, host + 1, 1, cudaMemcpyHostToHost, s));
    CHECK(cudaStreamSynchronize(s));
    cr_assert_eq(back[0], 9);
    cr_assert_eq(back[1], host[1]);
    cr_assert_eq(back[10], 7);
    CHECK(cudaStreamQuery(s));
    CHECK(cudaFreeAsync(d2, s));
    CHECK(cudaFreeAsync(d, s));
    CHECK(cudaStreamDestroy(s));
}

Test(sim_runtime, memcpy_2d_pitched_3d_managed_host)
{
    void *p;
    size_t pitch = 0;
    CHECK(cudaMallocPitch(&p, &pitch, 100, 10));
    cr_assert_geq(pitch, 100);
    char src[10][100], dst[10][100];
    for (int r = 0; r < 10; r++)
        memset(src[r], 'a' + r, 100);
    CHECK(cudaMemcpy2D(p, pitch, src, 100, 100, 10, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy2D(dst, 100, p, pitch, 100, 10, cudaMemcpyDeviceToHost));
    cr_assert_arr_eq(dst, src, sizeof src);
    cr_assert_eq(cudaMemcpy2D(dst, 50, p, pitch, 100, 10, cudaMemcpyDeviceToHost),
                 cudaErrorInvalidPitchValue);
    CHECK(cudaFree(p));

    struct cudaPitchedPtr pp;
    CHECK(cudaMalloc3D(&pp, (struct cudaExtent){.width = 64, .height = 4, .depth = 3}));
    cr_assert_not_null(pp.ptr);
    cr_assert_geq(pp.pitch, 64);
    cr_assert_eq(pp.xsize, 64);
    cr_assert_eq(pp.ysize, 4);
    CHECK(cudaMemset(pp.ptr, 1, pp.pitch * 12));
    CHECK(cudaFree(pp.ptr));

    float *m;
    CHECK(cudaMallocManaged((void **)&m, 256, cudaMemAttachGlobal));
    m[3] = 2.5f; /* managed memory is host-accessible */
    cr_assert_eq(m[3], 2.5f);
    CHECK(cudaFree(m));

    void *h1, *h2;
    CHECK(cudaMallocHost(&h1, 1000));
    CHECK(cudaHostAlloc(&h2, 1000, cudaHostAllocPortable));
    memset(h1, 1, 1000);
    memset(h2, 2, 1000);
    CHECK(cudaFreeHost(h1));
    CHECK(cudaFreeHost(h2));
}

Test(sim_runtime, registered_host_memory)
{
    enum { N = 8192 };
    char *buf = aligned_alloc(4096, N), out[16];
    memset(buf, 'x', N);
    CHECK(cudaHostRegister(buf, N, cudaHostRegisterMapped));
    unsigned int flags = 0;
    CHECK(cudaHostGetFlags(&flags, buf));
    cr_assert(flags & cudaHostRegisterMapped);
    void *dev = NULL;
    CHECK(cudaHostGetDevicePointer(&dev, buf, 0));
    cr_assert_not_null(dev);
    CHECK(cudaMemcpy(out, dev, sizeof out, cudaMemcpyDefault));
    cr_assert_eq(out[0], 'x');
    CHECK(cudaHostUnregister(buf));
    free(buf);
}

Test(sim_runtime, mem_get_info_tracks_allocations)
{
    size_t free0, total, free1, free2;
    CHECK(cudaMemGetInfo(&free0, &total));
    cr_assert_eq(total, DEVICE_BYTES);
    void *p;
    CHECK(cudaMalloc(&p, 10 * MIB));
    CHECK(cudaMemGetInfo(&free1, &total));
    cr_assert_leq(free1 + 10 * MIB, free0);
    CHECK(cudaFree(p));
    CHECK(cudaMemGetInfo(&free2, &total));
    cr_assert_eq(free2, free0);
}

Test(sim_runtime, out_of_memory_at_capacity)
{
    void *big = NULL, *more = NULL;
    CHECK(cudaMalloc(&big, 200 * MIB));
    cr_assert_eq(cudaMalloc(&more, 100 * MIB), cudaErrorMemoryAllocation);
    cr_assert_null(more);
    cr_assert_eq(cudaPeekAtLastError(), cudaErrorMemoryAllocation);
    cr_assert_eq(cudaGetLastError(), cudaErrorMemoryAllocation);
    cr_assert_eq(cudaGetLastError(), cudaSuccess);
    cr_assert_eq(cudaMallocAsync(&more, 100 * MIB, 0), cudaErrorMemoryAllocation);
    cr_assert_eq(cudaMallocManaged(&more, 100 * MIB, cudaMemAttachGlobal),
                 cudaErrorMemoryAllocation);
    cr_assert_eq(cudaMalloc(&more, DEVICE_BYTES + 1), cudaErrorMemoryAllocation);
    CHECK(cudaFree(big));
    CHECK(cudaMalloc(&more, 100 * MIB));
    CHECK(cudaFree(more));
}

Test(sim_runtime, memory_pools)
{
    cudaMemPool_t pool, own;
    CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
    cr_assert_not_null(pool);
    void *p;
    CHECK(cudaMallocFromPoolAsync(&p, 4096, pool, 0));
    CHECK(cudaMemset(p, 0, 4096));
    CHECK(cudaFreeAsync(p, 0));
    struct cudaMemPoolProps props = {.allocType = cudaMemAllocationTypePinned,
                                     .location = {.type = cudaMemLocationTypeDevice, .id = 0}};
    CHECK(cudaMemPoolCreate(&own, &props));
    uint64_t threshold = 1 << 20, got = 0;
    CHECK(cudaMemPoolSetAttribute(own, cudaMemPoolAttrReleaseThreshold, &threshold));
    CHECK(cudaMemPoolGetAttribute(own, cudaMemPoolAttrReleaseThreshold, &got));
    cr_assert_eq(got, threshold);
    cudaMemPool_t current;
    CHECK(cudaDeviceSetMemPool(0, own));
    CHECK(cudaDeviceGetMemPool(&current, 0));
    cr_assert_eq(current, own);
    CHECK(cudaMallocAsync(&p, 4096, 0)); /* from the device's current pool */
    CHECK(cudaFreeAsync(p, 0));
    CHECK(cudaDeviceSetMemPool(0, pool));
    CHECK(cudaMallocFromPoolAsync(&p, 1 << 20, own, 0));
    CHECK(cudaFreeAsync(p, 0));
    CHECK(cudaStreamSynchronize(0));
    CHECK(cudaMemPoolTrimTo(own, 0));
    CHECK(cudaMemPoolDestroy(own));
    CHECK(cudaMallocAsync_ptsz(&p, 128, 0));
    CHECK(cudaFreeAsync(p, 0));
}

Test(sim_runtime, pointer_attributes)
{
    void *d;
    int local = 0;
    float *m;
    struct cudaPointerAttributes attr;
    CHECK(cudaMalloc(&d, 4096));
    CHECK(cudaPointerGetAttributes(&attr, (char *)d + 16));
    cr_assert_eq(attr.type, cudaMemoryTypeDevice);
    cr_assert_eq(attr.device, 0);
    cr_assert_eq(attr.devicePointer, (char *)d + 16);
    CHECK(cudaPointerGetAttributes(&attr, &local));
    cr_assert_eq(attr.type, cudaMemoryTypeUnregistered);
    cr_assert_eq(attr.hostPointer, &local);
    CHECK(cudaMallocManaged((void **)&m, 64, cudaMemAttachGlobal));
    CHECK(cudaPointerGetAttributes(&attr, m));
    cr_assert_eq(attr.type, cudaMemoryTypeManaged);
    CHECK(cudaFree(m));
    CHECK(cudaFree(d));
}

Test(sim_runtime, device_reset_then_reuse)
{
    void *p;
    CHECK(cudaMalloc(&p, MIB));
    CHECK(cudaDeviceReset());
    CHECK(cudaMalloc(&p, MIB));
    CHECK(cudaMemset(p, 0, MIB));
    CHECK(cudaFree(p));
}

/* ---- streams and events ---- */

Test(sim_runtime, streams_and_events)
{
    cudaStream_t s1, s2;
    cudaEvent_t e0, e1;
    CHECK(cudaStreamCreate(&s1));
    CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreateWithFlags(&e1, cudaEventDefault));
    CHECK(cudaEventRecord(e0, s1));
    void *p;
    CHECK(cudaMalloc(&p, MIB));
    CHECK(cudaMemsetAsync(p, 3, MIB, s1));
    CHECK(cudaEventRecord(e1, s1));
    CHECK(cudaStreamWaitEvent(s2, e1, 0));
    CHECK(cudaEventSynchronize(e1));
    CHECK(cudaEventQuery(e1));
    float ms = -1;
    CHECK(cudaEventElapsedTime(&ms, e0, e1));
    cr_assert_geq(ms, 0.0f);
    CHECK(cudaStreamSynchronize(s2));
    CHECK(cudaStreamSynchronize(0));
    CHECK(cudaEventDestroy(e0));
    CHECK(cudaEventDestroy(e1));
    CHECK(cudaStreamDestroy(s1));
    CHECK(cudaStreamDestroy(s2));
    CHECK(cudaFree(p));
}

static void CUDART_CB count_host_func(void *data)
{
    (*(int *)data)++;
}

static void CUDART_CB count_callback(cudaStream_t stream, cudaError_t status, void *data)
{
    (void)stream;
    *(int *)data += status == cudaSuccess ? 10 : 1000;
}

Test(sim_runtime, host_functions_and_callbacks_run_in_stream_order)
{
    cudaStream_t s;
    int count = 0;
    CHECK(cudaStreamCreate(&s));
    CHECK(cudaLaunchHostFunc(s, count_host_func, &count));
    CHECK(cudaStreamAddCallback(s, count_callback, &count, 0));
    CHECK(cudaStreamSynchronize(s));
    cr_assert_eq(count, 11);
    CHECK(cudaStreamDestroy(s));
}

/* ---- kernels ---- */

/* scale(float *x, int n, float f): x[i] *= f over a grid*block index space. */
static void scale_kernel(void **params, const simcuda_launch *launch)
{
    float *x = *(float **)params[0];
    int n = *(int *)params[1];
    float f = *(float *)params[2];
    unsigned threads = launch->grid.x * launch->block.x;
    for (unsigned i = 0; i < threads && (int)i < n; i++)
        x[i] *= f;
}

static const size_t scale_params[] = {sizeof(float *), sizeof(int), sizeof(float)};

Test(sim_runtime, launch_kernels_every_way)
{
    CHECK(simcudaRegisterKernel(scale_kernel, "scale", 3, scale_params));
    CHECK(simcudaRegisterKernel(scale_kernel, "scale", 3, scale_params));
    enum { N = 100 };
    float host[N], *d;
    for (int i = 0; i < N; i++)
        host[i] = (float)i;
    CHECK(cudaMalloc((void **)&d, sizeof host));
    CHECK(cudaMemcpy(d, host, sizeof host, cudaMemcpyHostToDevice));
    int n = N;
    float f = 2.0f;
    void *args[] = {&d, &n, &f};
    dim3 grid = {4, 1, 1}, block = {32, 1, 1};
    CHECK(cudaLaunchKernel((const void *)scale_kernel, grid, block, args, 0, 0));
    CHECK(cudaLaunchKernel_ptsz((const void *)scale_kernel, grid, block, args, 0, 0));
    cudaLaunchConfig_t cfg = {.gridDim = grid, .blockDim = block};
    CHECK(cudaLaunchKernelExC(&cfg, (const void *)scale_kernel, args));
    cudaKernel_t k;
    CHECK(__cudaGetKernel(&k, (const void *)scale_kernel));
    CHECK(__cudaLaunchKernel(k, grid, block, args, 0, 0));
    CHECK(cudaMemcpy(host, d, sizeof host, cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; i++)
        cr_assert_eq(host[i], 16.0f * (float)i);
    cr_assert_eq(cudaLaunchKernel((const void *)host, grid, block, args, 0, 0),
                 cudaErrorInvalidDeviceFunction);
    CHECK(cudaFree(d));
}

Test(sim_runtime, func_get_param_info)
{
    CHECK(simcudaRegisterKernel(scale_kernel, "scale", 3, scale_params));
    size_t offset = 99, size = 99;
    CHECK(cudaFuncGetParamInfo((const void *)scale_kernel, 0, &offset, &size));
    cr_assert_eq(offset, 0);
    cr_assert_eq(size, 8);
    CHECK(cudaFuncGetParamInfo((const void *)scale_kernel, 1, &offset, &size));
    cr_assert_eq(offset, 8);
    cr_assert_eq(size, 4);
    CHECK(cudaFuncGetParamInfo((const void *)scale_kernel, 2, &offset, &size));
    cr_assert_eq(offset, 12);
    cr_assert_neq(cudaFuncGetParamInfo((const void *)scale_kernel, 3, &offset, &size), cudaSuccess);
    cr_assert_eq(cudaFuncGetParamInfo((const void *)&offset, 0, &offset, &size),
                 cudaErrorInvalidDeviceFunction);
}

/* ---- errors ---- */

Test(sim_runtime, error_names_and_strings)
{
    cr_assert_str_eq(cudaGetErrorString(cudaErrorMemoryAllocation), "out of memory");
    cr_assert_str_eq(cudaGetErrorName(cudaErrorMemoryAllocation), "cudaErrorMemoryAllocation");
    cr_assert_str_eq(cudaGetErrorName(cudaSuccess), "cudaSuccess");
    cr_assert_str_eq(cudaGetErrorName(cudaErrorStreamCaptureUnsupported),
                     "cudaErrorStreamCaptureUnsupported");
    cr_assert_str_eq(cudaGetErrorString((cudaError_t)12345), "unrecognized error code");
}

/* ---- driver entry points ---- */

Test(sim_runtime, driver_entry_points_by_version_work)
{
    enum cudaDriverEntryPointQueryResult st = cudaDriverEntryPointSymbolNotFound;
    __typeof__(&cuMemAlloc_v2) alloc = NULL;
    __typeof__(&cuMemFree_v2) release = NULL;
    CHECK(cudaGetDriverEntryPointByVersion("cuMemAlloc", (void **)&alloc, 13000, cudaEnableDefault,
                                           &st));
    cr_assert_eq(st, cudaDriverEntryPointSuccess);
    CHECK(cudaGetDriverEntryPointByVersion("cuMemFree", (void **)&release, 12000, cudaEnableDefault,
                                           &st));
    cr_assert_not_null(alloc);
    cr_assert_not_null(release);
    CUdeviceptr p = 0;
    cr_assert_eq(alloc(&p, 4096), CUDA_SUCCESS);
    size_t free0, total;
    CHECK(cudaMemGetInfo(&free0, &total));
    cr_assert_leq(free0, DEVICE_BYTES - 4096);
    CHECK(cudaMemset((void *)p, 0, 4096));
    cr_assert_eq(release(p), CUDA_SUCCESS);

    void *fn = (void *)1;
    CHECK(cudaGetDriverEntryPointByVersion("cuNoSuchFunction", &fn, 13000, cudaEnableDefault, &st));
    cr_assert_eq(st, cudaDriverEntryPointSymbolNotFound);
    cr_assert_null(fn);
}

Test(sim_runtime, driver_entry_points_honour_stream_flags)
{
    void *h = NULL, *legacy = NULL, *per_thread = NULL, *ptsz_default = NULL;
    enum cudaDriverEntryPointQueryResult st;
    CHECK(cudaGetDriverEntryPointByVersion("cuMemcpyHtoDAsync", &legacy, 13000,
                                           cudaEnableLegacyStream, &st));
    CHECK(cudaGetDriverEntryPointByVersion("cuMemcpyHtoDAsync", &per_thread, 13000,
                                           cudaEnablePerThreadDefaultStream, &st));
    CHECK(cudaGetDriverEntryPointByVersion_ptsz("cuMemcpyHtoDAsync", &ptsz_default, 13000,
                                                cudaEnableDefault, &st));
    h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    cr_assert_not_null(h);
    cr_assert_eq(legacy, dlsym(h, "cuMemcpyHtoDAsync_v2"));
    cr_assert_eq(per_thread, dlsym(h, "cuMemcpyHtoDAsync_v2_ptsz"));
    cr_assert_eq(ptsz_default, per_thread);
    dlclose(h);

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    void *launch = NULL;
    CHECK(cudaGetDriverEntryPoint("cuLaunchKernel", &launch, cudaEnableDefault, &st));
#pragma GCC diagnostic pop
    cr_assert_eq(st, cudaDriverEntryPointSuccess);
    cr_assert_not_null(launch);
}

/* ---- threads ---- */

static void *alloc_worker(void *arg)
{
    (void)arg;
    void *p = NULL;
    uintptr_t ok = cudaMalloc(&p, 64 * 1024) == cudaSuccess &&
                   cudaMemset(p, 1, 64 * 1024) == cudaSuccess && cudaFree(p) == cudaSuccess;
    return (void *)ok;
}

Test(sim_runtime, concurrent_first_calls_initialize_once)
{
    enum { THREADS = 8 };
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, alloc_worker, NULL), 0);
    for (int i = 0; i < THREADS; i++) {
        void *ok = NULL;
        pthread_join(t[i], &ok);
        cr_assert_eq((uintptr_t)ok, 1);
    }
}

/* ---- arguments ---- */

/* Missing output pointers are refused with an error, never dereferenced. */
Test(sim_runtime, null_arguments_are_errors_not_crashes)
{
    size_t total;
    cr_assert_eq(cudaMalloc(NULL, 16), cudaErrorInvalidValue);
    cr_assert_neq(cudaMemGetInfo(NULL, &total), cudaSuccess);
    cr_assert_neq(cudaMemGetInfo(&total, NULL), cudaSuccess);
    cr_assert_eq(cudaMallocPitch(NULL, &total, 4, 4), cudaErrorInvalidValue);
    cr_assert_eq(cudaMallocAsync(NULL, 16, 0), cudaErrorInvalidValue);
    cr_assert_eq(cudaMallocManaged(NULL, 16, cudaMemAttachGlobal), cudaErrorInvalidValue);
    cr_assert_eq(cudaMallocHost(NULL, 16), cudaErrorInvalidValue);
    cr_assert_eq(cudaMalloc3D(NULL, (struct cudaExtent){1, 1, 1}), cudaErrorInvalidValue);
    cr_assert_neq(cudaDeviceGetDefaultMemPool(NULL, 0), cudaSuccess);
    cr_assert_neq(cudaDeviceGetMemPool(NULL, 0), cudaSuccess);
    cr_assert_neq(cudaMemPoolCreate(NULL, NULL), cudaSuccess);
    cr_assert_neq(cudaHostGetFlags(NULL, &total), cudaSuccess);
    cr_assert_neq(cudaHostGetDevicePointer(NULL, &total, 0), cudaSuccess);
    cr_assert_neq(cudaGetDeviceCount(NULL), cudaSuccess);
    cr_assert_neq(cudaGetDevice(NULL), cudaSuccess);
    cr_assert_neq(cudaGetDeviceProperties(NULL, 0), cudaSuccess);
    cr_assert_neq(cudaDeviceGetAttribute(NULL, cudaDevAttrWarpSize, 0), cudaSuccess);
    cr_assert_neq(cudaPointerGetAttributes(NULL, &total), cudaSuccess);
    cr_assert_neq(cudaStreamCreate(NULL), cudaSuccess);
    cr_assert_neq(cudaEventCreate(NULL), cudaSuccess);
    cr_assert_neq(cudaEventElapsedTime(NULL, NULL, NULL), cudaSuccess);
    cr_assert_neq(cudaRuntimeGetVersion(NULL), cudaSuccess);
    cr_assert_neq(cudaDriverGetVersion(NULL), cudaSuccess);
    cr_assert_neq(cudaGetDriverEntryPointByVersion(NULL, NULL, 13000, 0, NULL), cudaSuccess);
    cr_assert_neq(cudaLaunchKernelExC(NULL, NULL, NULL), cudaSuccess);
    cr_assert_neq(cudaLaunchHostFunc(0, NULL, NULL), cudaSuccess);
    cr_assert_neq(simcudaRegisterKernel(NULL, "x", 0, NULL), cudaSuccess);
    CHECK(simcudaRegisterKernel(scale_kernel, "scale", 3, scale_params));
    cr_assert_neq(cudaFuncGetParamInfo((const void *)scale_kernel, 0, NULL, NULL), cudaSuccess);
    CHECK(cudaFree(NULL));
    CHECK(cudaFreeHost(NULL));
}
