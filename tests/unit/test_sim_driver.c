/* The simulated driver's device, context, allocation and entry-point calls. */
#include <criterion/criterion.h>

#include <cuda.h>
#include <cudaTypedefs.h>
#include <simcuda.h>

#include <dlfcn.h>
#include <string.h>

#define CU_OK(call) cr_assert_eq((call), CUDA_SUCCESS, "%s", #call)

static void with_context(void)
{
    CUcontext ctx;
    CU_OK(cuInit(0));
    CU_OK(cuDevicePrimaryCtxRetain(&ctx, 0));
    CU_OK(cuCtxSetCurrent(ctx));
}

TestSuite(device, .init = with_context);

Test(device, version_name_and_count)
{
    int version = 0, count = 0;
    char name[64];
    CU_OK(cuDriverGetVersion(&version));
    cr_assert_eq(version, 13000);
    CU_OK(cuDeviceGetCount(&count));
    cr_assert_eq(count, 1);
    CU_OK(cuDeviceGetName(name, sizeof(name), 0));
    cr_assert_str_eq(name, "simcuda");
    CUdevice dev = -1;
    CU_OK(cuDeviceGet(&dev, 0));
    cr_assert_eq(dev, 0);
    cr_assert_eq(cuDeviceGet(&dev, 1), CUDA_ERROR_INVALID_DEVICE);
}

Test(device, total_memory_is_the_configured_capacity)
{
    size_t total = 0;
    CU_OK(cuDeviceTotalMem(&total, 0));
    cr_assert_eq(total, 16ull << 30); /* SIMCUDA_DEVICE_MEMORY=16g in the test environment */
}

Test(device, attributes)
{
    int v;
    CU_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
    cr_assert_eq(v, 9);
    CU_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0));
    cr_assert_eq(v, 0);
    CU_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0));
    cr_assert_eq(v, 1);
    CU_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 0));
    cr_assert_eq(v, 1);
    CU_OK(
        cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0));
    cr_assert_eq(v, 1);
    cr_assert_eq(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX, 0), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 3),
                 CUDA_ERROR_INVALID_DEVICE);
}

Test(device, error_names_and_strings)
{
    const char *s;
    CU_OK(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &s));
    cr_assert_str_eq(s, "CUDA_ERROR_OUT_OF_MEMORY");
    CU_OK(cuGetErrorString(CUDA_ERROR_INVALID_VALUE, &s));
    cr_assert_str_eq(s, "invalid argument");
    cr_assert_eq(cuGetErrorName((CUresult)12345, &s), CUDA_ERROR_INVALID_VALUE);
    cr_assert_null(s);
}

Test(context, calls_before_init_fail)
{
    int count;
    CUdeviceptr p;
    cr_assert_eq(cuDeviceGetCount(&count), CUDA_ERROR_NOT_INITIALIZED);
    cr_assert_eq(cuMemAlloc(&p, 256), CUDA_ERROR_NOT_INITIALIZED);
    cr_assert_eq(cuInit(1), CUDA_ERROR_INVALID_VALUE);
}

Test(context, allocation_needs_a_current_context)
{
    CUdeviceptr p;
    CU_OK(cuInit(0));
    cr_assert_eq(cuMemAlloc(&p, 256), CUDA_ERROR_INVALID_CONTEXT);
}

Test(context, primary_retain_release_and_state)
{
    CUcontext a, b, cur;
    unsigned flags;
    int active;
    CU_OK(cuInit(0));
    CU_OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    cr_assert_eq(active, 0);
    CU_OK(cuDevicePrimaryCtxRetain(&a, 0));
    CU_OK(cuDevicePrimaryCtxRetain(&b, 0));
    cr_assert_eq(a, b);
    CU_OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    cr_assert_eq(active, 1);
    CU_OK(cuCtxSetCurrent(a));
    CU_OK(cuCtxGetCurrent(&cur));
    cr_assert_eq(cur, a);
    CUdevice dev = -1;
    CU_OK(cuCtxGetDevice(&dev));
    cr_assert_eq(dev, 0);
    CU_OK(cuCtxSynchronize());
    CU_OK(cuDevicePrimaryCtxRelease(0));
    CU_OK(cuDevicePrimaryCtxRelease(0));
    CU_OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    cr_assert_eq(active, 0);
    cr_assert_eq(cuCtxSynchronize(), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    cr_assert_eq(cuDevicePrimaryCtxRelease(0), CUDA_ERROR_INVALID_CONTEXT);
}

Test(context, push_pop_and_created_contexts)
{
    CUcontext primary, created, cur;
    CU_OK(cuInit(0));
    CU_OK(cuDevicePrimaryCtxRetain(&primary, 0));
    CU_OK(cuCtxPushCurrent(primary));
    CU_OK(cuCtxCreate(&created, NULL, 0, 0));
    CU_OK(cuCtxGetCurrent(&cur));
    cr_assert_eq(cur, created);
    CU_OK(cuCtxPopCurrent(&cur));
    cr_assert_eq(cur, created);
    CU_OK(cuCtxGetCurrent(&cur));
    cr_assert_eq(cur, primary);
    CU_OK(cuCtxDestroy(created));
    CU_OK(cuCtxPopCurrent(&cur));
    cr_assert_eq(cuCtxPopCurrent(&cur), CUDA_ERROR_INVALID_CONTEXT);
}

TestSuite(alloc, .init = with_context);

Test(alloc, alloc_write_read_free)
{
    CUdeviceptr p;
    size_t free0, free1, total;
    CU_OK(cuMemGetInfo(&free0, &total));
    CU_OK(cuMemAlloc(&p, 1000));
    cr_assert_eq(p % 256, 0);
    CU_OK(cuMemGetInfo(&free1, &total));
    cr_assert_eq(free0 - free1, 1024, "charged in 256-byte units");
    memset((void *)p, 0x5a, 1000); /* device memory is host memory at the same address */
    CUdeviceptr base;
    size_t size;
    CU_OK(cuMemGetAddressRange(&base, &size, p + 10));
    cr_assert_eq(base, p);
    cr_assert_eq(size, 1000);
    CU_OK(cuMemFree(p));
    CU_OK(cuMemGetInfo(&free1, &total));
    cr_assert_eq(free0, free1);
    cr_assert_eq(cuMemGetAddressRange(&base, &size, p), CUDA_ERROR_NOT_FOUND);
}

Test(alloc, invalid_arguments)
{
    CUdeviceptr p;
    cr_assert_eq(cuMemAlloc(&p, 0), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(cuMemAlloc(NULL, 16), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemFree(0));
    CU_OK(cuMemAlloc(&p, 4096));
    cr_assert_eq(cuMemFree(p + 256), CUDA_ERROR_INVALID_VALUE, "not the base");
    CU_OK(cuMemFree(p));
    cr_assert_eq(cuMemFree(p), CUDA_ERROR_INVALID_VALUE, "double free");
    cr_assert_eq(cuMemFree((CUdeviceptr)&p), CUDA_ERROR_INVALID_VALUE, "host pointer");
}

Test(alloc, pitch_and_managed)
{
    CUdeviceptr p, m;
    size_t pitch, free0, free1, total;
    CU_OK(cuMemGetInfo(&free0, &total));
    CU_OK(cuMemAllocPitch(&p, &pitch, 1000, 3, 4));
    cr_assert_eq(pitch, 1024);
    CU_OK(cuMemGetInfo(&free1, &total));
    cr_assert_eq(free0 - free1, pitch * 3);
    cr_assert_eq(cuMemAllocPitch(&p, &pitch, 1000, 3, 3), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemAllocManaged(&m, 100, CU_MEM_ATTACH_GLOBAL));
    ((char *)m)[99] = 1;
    cr_assert_eq(cuMemAllocManaged(&m, 100, 7), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemGetInfo(&free1, &total));
    cr_assert_eq(free0 - free1, pitch * 3 + 256);
}

TestSuite(procaddr);

Test(procaddr, versions_pick_the_abi)
{
    void *fn;
    CUdriverProcAddressQueryResult st;
    CU_OK(cuGetProcAddress("cuMemAlloc", &fn, 13000, 0, &st));
    cr_assert_eq(st, CU_GET_PROC_ADDRESS_SUCCESS);
    cr_assert_eq(fn, (void *)cuMemAlloc_v2);
    CU_OK(cuGetProcAddress("cuMemAlloc", &fn, 3000, 0, &st));
    cr_assert_null(fn);
    cr_assert_eq(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    CU_OK(cuGetProcAddress("cuCtxGetDevice", &fn, 12080, 0, &st));
    cr_assert_eq(fn, (void *)cuCtxGetDevice);
    CU_OK(cuGetProcAddress("cuCtxGetDevice", &fn, 13000, 0, &st));
    cr_assert_eq(fn, (void *)cuCtxGetDevice_v2);
    CU_OK(cuGetProcAddress("cuGetProcAddress", &fn, 12000, 0, &st));
    cr_assert_eq(fn, (void *)cuGetProcAddress_v2);
}

Test(procaddr, unknown_symbols_and_bad_arguments)
{
    void *fn = &fn;
    CUdriverProcAddressQueryResult st;
    CU_OK(cuGetProcAddress("cuNoSuchThing", &fn, 13000, 0, &st));
    cr_assert_null(fn);
    cr_assert_eq(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    cr_assert_eq(cuGetProcAddress("cuMemAlloc", &fn, 13010, 0, &st), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(cuGetProcAddress("cuMemAlloc", &fn, 13000, 4, &st), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(cuGetProcAddress(NULL, &fn, 13000, 0, &st), CUDA_ERROR_INVALID_VALUE);
}

Test(procaddr, per_thread_flag_gives_ptsz_variants)
{
    void *legacy, *ptsz, *dflt;
    CU_OK(cuGetProcAddress("cuLaunchKernel", &legacy, 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM,
                           NULL));
    CU_OK(cuGetProcAddress("cuLaunchKernel", &dflt, 13000, CU_GET_PROC_ADDRESS_DEFAULT, NULL));
    CU_OK(cuGetProcAddress("cuLaunchKernel", &ptsz, 13000,
                           CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, NULL));
    cr_assert_eq(legacy, dflt);
    cr_assert_neq(legacy, ptsz);
    cr_assert_eq(ptsz, dlsym(RTLD_DEFAULT, "cuLaunchKernel_ptsz"));
    CU_OK(cuGetProcAddress("cuLaunchKernel", &ptsz, 6050,
                           CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, NULL));
    cr_assert_eq(ptsz, legacy, "per-thread variants start with CUDA 7.0");
    /* a function without a per-thread variant gives its only one */
    CU_OK(cuGetProcAddress("cuMemAlloc", &ptsz, 13000,
                           CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, NULL));
    cr_assert_eq(ptsz, (void *)cuMemAlloc_v2);
}

Test(procaddr, private_entry_points)
{
    void *fn;
    CU_OK(cuGetProcAddress("simcuRegisterKernel", &fn, 12000, 0, NULL));
    cr_assert_eq(fn, (void *)simcuRegisterKernel);
    CU_OK(cuGetProcAddress("simcuStatsAdd", &fn, 12000, 0, NULL));
    cr_assert_eq(fn, (void *)simcuStatsAdd);
}

Test(device, identity_queries)
{
    CUuuid uuid;
    char bus[32];
    CU_OK(cuDeviceGetUuid(&uuid, 0));
    cr_assert_eq(memcmp(uuid.bytes, "simcuda-device-0", 16), 0);
    CU_OK(cuDeviceGetPCIBusId(bus, sizeof(bus), 0));
    cr_assert_str_eq(bus, "0000:00:00.0");
}

Test(context, queries_of_the_current_context, .init = with_context)
{
    CUcontext ctx;
    unsigned flags = 99, version = 0;
    unsigned long long id = 0;
    int least = 1, greatest = 1;
    CU_OK(cuCtxGetCurrent(&ctx));
    CU_OK(cuCtxGetFlags(&flags));
    cr_assert_eq(flags, 0);
    CU_OK(cuDevicePrimaryCtxSetFlags(0, CU_CTX_SCHED_BLOCKING_SYNC));
    CU_OK(cuCtxGetFlags(&flags));
    cr_assert_eq(flags, CU_CTX_SCHED_BLOCKING_SYNC);
    cr_assert_eq(cuDevicePrimaryCtxSetFlags(0, 1u << 30), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuCtxGetApiVersion(ctx, &version));
    cr_assert_geq(version, 3020);
    CU_OK(cuCtxGetId(ctx, &id));
    cr_assert_neq(id, 0);
    CU_OK(cuCtxGetStreamPriorityRange(&least, &greatest));
    cr_assert_eq(least, 0);
    cr_assert_eq(greatest, -5);
    /* the CUDA 13 forms that name the context */
    CUdevice dev = -1;
    CU_OK(cuCtxGetDevice_v2(&dev, ctx));
    cr_assert_eq(dev, 0);
    CU_OK(cuCtxSynchronize_v2(ctx));
    CU_OK(cuCtxSynchronize_v2(NULL));
}

Test(procaddr, v2_only_functions_and_legacy_lookup)
{
    void *fn;
    CUdriverProcAddressQueryResult st;
    CU_OK(cuGetProcAddress("cuMemCreate", &fn, 10010, 0, &st));
    cr_assert_eq(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT, "VMM arrived in 10.2");
    CU_OK(cuGetProcAddress("cuMemCreate", &fn, 10020, 0, &st));
    cr_assert_eq(fn, (void *)cuMemCreate);
    CUresult (*legacy)(const char *, void **, int, cuuint64_t) =
        dlsym(RTLD_DEFAULT, "cuGetProcAddress");
    cr_assert_not_null(legacy);
    CU_OK(legacy("cuMemFree", &fn, 12000, 0));
    cr_assert_eq(fn, (void *)cuMemFree_v2);
    CU_OK(legacy("cuNoSuchThing", &fn, 12000, 0));
    cr_assert_null(fn);
}
