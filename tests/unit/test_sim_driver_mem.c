/* The simulated driver's copies, memsets, pools, pointer attributes, streams, events and
 * kernel launches. */
#include <criterion/criterion.h>

#include <cuda.h>
#include <simcuda.h>

#include <stdint.h>
#include <string.h>

#define CU_OK(call) cr_assert_eq((call), CUDA_SUCCESS, "%s", #call)

static void with_context(void)
{
    CUcontext ctx;
    CU_OK(cuInit(0));
    CU_OK(cuDevicePrimaryCtxRetain(&ctx, 0));
    CU_OK(cuCtxSetCurrent(ctx));
}

TestSuite(copy, .init = with_context);

Test(copy, round_trip_through_device_memory)
{
    char in[300], out[300] = {0};
    for (int i = 0; i < 300; i++)
        in[i] = (char)i;
    CUdeviceptr a, b;
    CU_OK(cuMemAlloc(&a, 300));
    CU_OK(cuMemAlloc(&b, 300));
    CU_OK(cuMemcpyHtoD(a, in, 300));
    CU_OK(cuMemcpyDtoD(b, a, 300));
    CU_OK(cuMemcpyDtoH(out, b, 300));
    cr_assert_arr_eq(in, out, 300);
    memset(out, 0, sizeof(out));
    CU_OK(cuMemcpyHtoDAsync(a, in + 100, 200, NULL));
    CU_OK(cuMemcpyDtoDAsync(b, a, 200, CU_STREAM_PER_THREAD));
    CU_OK(cuMemcpyDtoHAsync(out, b, 200, CU_STREAM_LEGACY));
    cr_assert_arr_eq(in + 100, out, 200);
    CU_OK(cuMemcpy((CUdeviceptr)out, a, 10));
    CU_OK(cuMemcpyAsync(b, (CUdeviceptr)in, 10, NULL));
}

Test(copy, bad_ranges_are_invalid_values)
{
    char host[64];
    CUdeviceptr a;
    CU_OK(cuMemAlloc(&a, 64));
    cr_assert_eq(cuMemcpyHtoD(a, host, 65), CUDA_ERROR_INVALID_VALUE, "past the end");
    cr_assert_eq(cuMemcpyHtoD(a + 32, host, 64), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(cuMemcpyHtoD((CUdeviceptr)host, host, 8), CUDA_ERROR_INVALID_VALUE,
                 "host pointer as device");
    cr_assert_eq(cuMemcpyDtoH(host, 0, 8), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemFree(a));
    cr_assert_eq(cuMemcpyDtoH(host, a, 8), CUDA_ERROR_INVALID_VALUE, "freed");
    cr_assert_eq(cuMemsetD8(a, 0, 8), CUDA_ERROR_INVALID_VALUE, "freed");
    CU_OK(cuMemcpyHtoD(a, host, 0)); /* nothing to copy is no error */
}

Test(copy, memsets)
{
    CUdeviceptr a;
    CU_OK(cuMemAlloc(&a, 64));
    CU_OK(cuMemsetD8(a, 0xab, 64));
    cr_assert_eq(((unsigned char *)a)[63], 0xab);
    CU_OK(cuMemsetD16(a, 0x1234, 32));
    cr_assert_eq(((uint16_t *)a)[31], 0x1234);
    CU_OK(cuMemsetD32Async(a, 0xdeadbeef, 16, NULL));
    cr_assert_eq(((uint32_t *)a)[15], 0xdeadbeef);
    CU_OK(cuMemsetD8Async(a, 1, 1, NULL));
    CU_OK(cuMemsetD16Async(a, 2, 1, NULL));
    cr_assert_eq(cuMemsetD32(a + 2, 0, 1), CUDA_ERROR_INVALID_VALUE, "misaligned");
    cr_assert_eq(cuMemsetD32(a, 0, 17), CUDA_ERROR_INVALID_VALUE, "past the end");
}

Test(copy, two_dimensional)
{
    CUdeviceptr d;
    size_t pitch;
    float host[4][5], back[4][5] = {{0}};
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 5; c++)
            host[r][c] = (float)(r * 10 + c);
    CU_OK(cuMemAllocPitch(&d, &pitch, sizeof(host[0]), 4, 4));
    CUDA_MEMCPY2D up = {.srcMemoryType = CU_MEMORYTYPE_HOST,
                        .srcHost = host,
                        .srcPitch = sizeof(host[0]),
                        .dstMemoryType = CU_MEMORYTYPE_DEVICE,
                        .dstDevice = d,
                        .dstPitch = pitch,
                        .WidthInBytes = sizeof(host[0]),
                        .Height = 4};
    CU_OK(cuMemcpy2D(&up));
    cr_assert_eq(*(float *)(d + 3 * pitch + 4 * sizeof(float)), 34.0f);
    CUDA_MEMCPY2D down = {.srcMemoryType = CU_MEMORYTYPE_UNIFIED,
                          .srcDevice = d,
                          .srcPitch = pitch,
                          .dstMemoryType = CU_MEMORYTYPE_HOST,
                          .dstHost = back,
                          .dstPitch = sizeof(back[0]),
                          .WidthInBytes = sizeof(back[0]),
                          .Height = 4};
    CU_OK(cuMemcpy2DAsync(&down, NULL));
    cr_assert_arr_eq(host, back, sizeof(host));
    up.Height = 5;
    cr_assert_eq(cuMemcpy2D(&up), CUDA_ERROR_INVALID_VALUE, "past the allocation");
}

TestSuite(pool, .init = with_context);

static uint64_t pool_attr(CUmemoryPool pool, CUmemPool_attribute attr)
{
    cuuint64_t v = 0;
    CU_OK(cuMemPoolGetAttribute(pool, attr, &v));
    return v;
}

Test(pool, stream_ordered_allocations_use_the_current_pool)
{
    CUmemoryPool dflt, cur;
    CU_OK(cuDeviceGetDefaultMemPool(&dflt, 0));
    CU_OK(cuDeviceGetMemPool(&cur, 0));
    cr_assert_eq(dflt, cur);
    CUdeviceptr p;
    size_t free0, free1, total;
    CU_OK(cuMemGetInfo(&free0, &total));
    CU_OK(cuMemAllocAsync(&p, 1000, NULL));
    CU_OK(cuMemGetInfo(&free1, &total));
    cr_assert_eq(free0 - free1, 1024);
    cr_assert_eq(pool_attr(dflt, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 1024);
    CUmemoryPool owner = NULL;
    CU_OK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, p));
    cr_assert_eq(owner, dflt);
    CU_OK(cuMemFreeAsync(p, NULL));
    cr_assert_eq(pool_attr(dflt, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 0);
    cr_assert_eq(pool_attr(dflt, CU_MEMPOOL_ATTR_USED_MEM_HIGH), 1024);
    cuuint64_t zero = 0;
    CU_OK(cuMemPoolSetAttribute(dflt, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &zero));
    cr_assert_eq(pool_attr(dflt, CU_MEMPOOL_ATTR_USED_MEM_HIGH), 0);
    cr_assert_eq(cuMemFreeAsync(p, NULL), CUDA_ERROR_INVALID_VALUE, "double free");
}

Test(pool, created_pools)
{
    CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                            .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    CUmemoryPool pool, dflt;
    CU_OK(cuMemPoolCreate(&pool, &props));
    cuuint64_t threshold = UINT64_MAX;
    CU_OK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
    cr_assert_eq(pool_attr(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD), UINT64_MAX);
    CUdeviceptr p;
    CU_OK(cuMemAllocFromPoolAsync(&p, 512, pool, NULL));
    cr_assert_eq(pool_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 512);
    CU_OK(cuMemPoolDestroy(pool)); /* live allocations keep the pool until freed */
    CU_OK(cuMemFree(p));
    CU_OK(cuDeviceGetDefaultMemPool(&dflt, 0));
    cr_assert_eq(cuMemPoolDestroy(dflt), CUDA_ERROR_INVALID_VALUE);
    CUmemLocation loc = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0};
    CU_OK(cuMemGetDefaultMemPool(&pool, &loc, CU_MEM_ALLOCATION_TYPE_PINNED));
    cr_assert_eq(pool, dflt);
    props.location.type = CU_MEM_LOCATION_TYPE_HOST;
    cr_assert_eq(cuMemPoolCreate(&pool, &props), CUDA_ERROR_NOT_SUPPORTED);
}

TestSuite(pointer, .init = with_context);

Test(pointer, attributes_of_device_and_host_memory)
{
    CUdeviceptr p, m;
    CU_OK(cuMemAlloc(&p, 1000));
    CU_OK(cuMemAllocManaged(&m, 1000, CU_MEM_ATTACH_GLOBAL));
    CUmemorytype type = 0;
    CU_OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p + 100));
    cr_assert_eq(type, CU_MEMORYTYPE_DEVICE);
    CUdeviceptr start = 0;
    size_t size = 0;
    CU_OK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p + 100));
    CU_OK(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p + 100));
    cr_assert_eq(start, p);
    cr_assert_eq(size, 1000);
    int managed = -1;
    CU_OK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, p));
    cr_assert_eq(managed, 0);
    CU_OK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, m));
    cr_assert_eq(managed, 1);
    int host_var;
    cr_assert_eq(
        cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)&host_var),
        CUDA_ERROR_INVALID_VALUE);
    CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                   CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
    int ordinal = 7;
    void *data[] = {&type, &ordinal};
    CU_OK(cuPointerGetAttributes(2, attrs, data, (CUdeviceptr)&host_var));
    cr_assert_eq(type, 0);
    cr_assert_eq(ordinal, -2);
    CU_OK(cuPointerGetAttributes(2, attrs, data, p));
    cr_assert_eq(type, CU_MEMORYTYPE_DEVICE);
    cr_assert_eq(ordinal, 0);
}

TestSuite(stream, .init = with_context);

Test(stream, streams_run_synchronously)
{
    CUstream s, hi;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreateWithPriority(&hi, 0, -100));
    int prio = 0;
    unsigned flags = 0;
    CU_OK(cuStreamGetPriority(hi, &prio));
    cr_assert_eq(prio, -5, "clamped to the greatest priority");
    CU_OK(cuStreamGetFlags(s, &flags));
    cr_assert_eq(flags, CU_STREAM_NON_BLOCKING);
    CU_OK(cuStreamQuery(s));
    CU_OK(cuStreamSynchronize(s));
    cr_assert_eq(cuStreamCreate(&s, 4), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuStreamDestroy(hi));
    CU_OK(cuStreamDestroy(s));
    cr_assert_eq(cuStreamDestroy(NULL), CUDA_ERROR_INVALID_HANDLE);
}

Test(stream, events_carry_times)
{
    CUevent a, b, untimed;
    CU_OK(cuEventCreate(&a, 0));
    CU_OK(cuEventCreate(&b, CU_EVENT_BLOCKING_SYNC));
    CU_OK(cuEventCreate(&untimed, CU_EVENT_DISABLE_TIMING));
    float ms = -1;
    cr_assert_eq(cuEventElapsedTime(&ms, a, b), CUDA_ERROR_INVALID_HANDLE, "not recorded");
    CU_OK(cuEventRecord(a, NULL));
    CU_OK(cuEventRecord(b, CU_STREAM_PER_THREAD));
    CU_OK(cuEventSynchronize(b));
    CU_OK(cuEventQuery(b));
    CU_OK(cuEventElapsedTime(&ms, a, b));
    cr_assert_geq(ms, 0.0f);
    CU_OK(cuEventRecord(untimed, NULL));
    cr_assert_eq(cuEventElapsedTime(&ms, a, untimed), CUDA_ERROR_INVALID_HANDLE);
    CUstream s;
    CU_OK(cuStreamCreate(&s, 0));
    CU_OK(cuStreamWaitEvent(s, a, 0));
    CU_OK(cuEventDestroy(a));
    CU_OK(cuEventDestroy(b));
    CU_OK(cuEventDestroy(untimed));
}

static void count_call(void *data)
{
    ++*(int *)data;
}

static void count_callback(CUstream s, CUresult status, void *data)
{
    (void)s;
    cr_assert_eq(status, CUDA_SUCCESS);
    ++*(int *)data;
}

Test(stream, host_callbacks_run_in_order)
{
    int calls = 0;
    CU_OK(cuLaunchHostFunc(NULL, count_call, &calls));
    cr_assert_eq(calls, 1);
    CU_OK(cuStreamAddCallback(NULL, count_callback, &calls, 0));
    cr_assert_eq(calls, 2);
    cr_assert_eq(cuLaunchHostFunc(NULL, NULL, &calls), CUDA_ERROR_INVALID_VALUE);
}

TestSuite(kernel, .init = with_context);

static void axpy(void **params, const simcuda_launch *l)
{
    float a = *(float *)params[0];
    float *x = *(float **)params[1];
    float *y = *(float **)params[2];
    int n = *(int *)params[3];
    unsigned threads = l->grid.x * l->block.x;
    for (unsigned t = 0; t < threads; t++)
        for (int i = (int)t; i < n; i += (int)threads)
            y[i] += a * x[i];
}

static CUfunction register_axpy(void)
{
    const size_t sizes[] = {sizeof(float), sizeof(float *), sizeof(float *), sizeof(int)};
    CUfunction f, again;
    CU_OK(simcuRegisterKernel(axpy, "axpy", 4, sizes, &f));
    CU_OK(simcuRegisterKernel(axpy, "axpy", 4, sizes, &again));
    cr_assert_eq(f, again);
    return f;
}

Test(kernel, launch_runs_the_host_function)
{
    CUfunction f = register_axpy();
    CUdeviceptr x, y;
    int n = 1000;
    CU_OK(cuMemAlloc(&x, n * sizeof(float)));
    CU_OK(cuMemAlloc(&y, n * sizeof(float)));
    for (int i = 0; i < n; i++)
        ((float *)x)[i] = (float)i, ((float *)y)[i] = 1.0f;
    float a = 2.0f;
    void *params[] = {&a, &x, &y, &n};
    CU_OK(cuLaunchKernel(f, 4, 1, 1, 128, 1, 1, 0, NULL, params, NULL));
    cr_assert_eq(((float *)y)[999], 1.0f + 2.0f * 999);
    CUlaunchConfig cfg = {.gridDimX = 1,
                          .gridDimY = 1,
                          .gridDimZ = 1,
                          .blockDimX = 32,
                          .blockDimY = 1,
                          .blockDimZ = 1};
    CU_OK(cuLaunchKernelEx(&cfg, f, params, NULL));
    cr_assert_eq(((float *)y)[999], 1.0f + 4.0f * 999);
    cr_assert_eq(cuLaunchKernel(f, 0, 1, 1, 1, 1, 1, 0, NULL, params, NULL),
                 CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(cuLaunchKernel(f, 1, 1, 1, 2048, 1, 1, 0, NULL, params, NULL),
                 CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(cuLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL),
                 CUDA_ERROR_INVALID_HANDLE);
}

Test(kernel, packed_parameter_buffer)
{
    CUfunction f = register_axpy();
    float x[3] = {1, 2, 3}, y[3] = {0};
    struct {
        float a;
        float *x, *y;
        int n;
    } args = {3.0f, x, y, 3};
    size_t size = sizeof(args);
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &args, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                     CU_LAUNCH_PARAM_END};
    CU_OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, extra));
    cr_assert_eq(y[2], 9.0f);
}

Test(kernel, parameter_layout_and_name)
{
    CUfunction f = register_axpy();
    size_t off, size;
    const size_t want_off[] = {0, 8, 16, 24}, want_size[] = {4, 8, 8, 4};
    for (size_t i = 0; i < 4; i++) {
        CU_OK(cuFuncGetParamInfo(f, i, &off, &size));
        cr_assert_eq(off, want_off[i]);
        cr_assert_eq(size, want_size[i]);
    }
    cr_assert_eq(cuFuncGetParamInfo(f, 4, &off, &size), CUDA_ERROR_INVALID_VALUE);
    const char *name;
    CU_OK(cuFuncGetName(&name, f));
    cr_assert_str_eq(name, "axpy");
}

static void store_one(void **params, const simcuda_launch *launch)
{
    (void)launch;
    **(int **)params[0] = 1;
}

/* Registered without parameter sizes: no layout to answer with, launchable with kernelParams
 * only (a packed buffer needs the offsets). */
Test(kernel, function_without_parameter_info)
{
    CUfunction f;
    CU_OK(simcuRegisterKernel(store_one, "store_one", 1, NULL, &f));
    size_t off, size;
    cr_assert_eq(cuFuncGetParamInfo(f, 0, &off, &size), CUDA_ERROR_NOT_SUPPORTED);
    int target = 0, *p = &target;
    void *params[] = {&p};
    CU_OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
    cr_assert_eq(target, 1);
    size_t bytes = sizeof p;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &p, CU_LAUNCH_PARAM_BUFFER_SIZE, &bytes,
                     CU_LAUNCH_PARAM_END};
    cr_assert_eq(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, extra),
                 CUDA_ERROR_INVALID_VALUE);
}

TestSuite(hostmem, .init = with_context);

Test(hostmem, page_locked_memory_is_host_memory)
{
    void *h;
    size_t free0, free1, total;
    CU_OK(cuMemGetInfo(&free0, &total));
    CU_OK(cuMemHostAlloc(&h, 5000, CU_MEMHOSTALLOC_PORTABLE));
    CU_OK(cuMemGetInfo(&free1, &total));
    cr_assert_eq(free0, free1, "not device memory");
    memset(h, 3, 5000);
    CUdeviceptr d, dh;
    CU_OK(cuMemAlloc(&d, 5000));
    CU_OK(cuMemcpyHtoD(d, h, 5000));
    cr_assert_eq(((char *)d)[4999], 3);
    CUmemorytype type = 0;
    CU_OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)h));
    cr_assert_eq(type, CU_MEMORYTYPE_HOST);
    CU_OK(cuMemHostGetDevicePointer(&dh, h, 0));
    cr_assert_eq(dh, (CUdeviceptr)h);
    cr_assert_eq(cuMemFreeHost((char *)h + 1), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(cuMemFree((CUdeviceptr)h), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemFreeHost(h));
    cr_assert_eq(cuMemHostAlloc(&h, 10, 64), CUDA_ERROR_INVALID_VALUE);
}

Test(hostmem, register_and_unregister)
{
    static char buf[8192];
    CU_OK(cuMemHostRegister(buf, sizeof(buf), 0));
    cr_assert_eq(cuMemHostRegister(buf, 16, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    unsigned flags;
    CU_OK(cuMemHostGetFlags(&flags, buf + 10));
    CU_OK(cuMemHostUnregister(buf));
    cr_assert_eq(cuMemHostUnregister(buf), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
}

Test(stream, stream_queries, .init = with_context)
{
    CUstream s;
    CUcontext ctx, owner;
    CUdevice dev = -1;
    unsigned long long id1 = 0, id2 = 0;
    CU_OK(cuCtxGetCurrent(&ctx));
    CU_OK(cuStreamCreate(&s, 0));
    CU_OK(cuStreamGetCtx(s, &owner));
    cr_assert_eq(owner, ctx);
    CU_OK(cuStreamGetDevice(s, &dev));
    cr_assert_eq(dev, 0);
    CU_OK(cuStreamGetId(s, &id1));
    CU_OK(cuStreamGetId(NULL, &id2));
    cr_assert_neq(id1, id2);
    CUevent e;
    CU_OK(cuEventCreate(&e, 0));
    CU_OK(cuEventRecordWithFlags(e, s, CU_EVENT_RECORD_DEFAULT));
    cr_assert_eq(cuEventRecordWithFlags(e, s, 8), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuStreamDestroy(s));
}

Test(pool, current_pool_can_be_replaced, .init = with_context)
{
    CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                            .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    CUmemoryPool pool, cur, dflt;
    CU_OK(cuDeviceGetDefaultMemPool(&dflt, 0));
    CU_OK(cuMemPoolCreate(&pool, &props));
    CU_OK(cuDeviceSetMemPool(0, pool));
    CU_OK(cuDeviceGetMemPool(&cur, 0));
    cr_assert_eq(cur, pool);
    CUdeviceptr p;
    CU_OK(cuMemAllocAsync(&p, 100, NULL));
    cr_assert_eq(pool_attr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 256);
    CU_OK(cuMemPoolTrimTo(pool, 0));
    CU_OK(cuMemFreeAsync(p, NULL));
    CUmemLocation loc = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0};
    CU_OK(cuMemSetMemPool(&loc, CU_MEM_ALLOCATION_TYPE_PINNED, dflt));
    CU_OK(cuMemGetMemPool(&cur, &loc, CU_MEM_ALLOCATION_TYPE_PINNED));
    cr_assert_eq(cur, dflt);
    CU_OK(cuMemPoolDestroy(pool));
}

Test(copy, unaligned_2d_and_allocated_host, .init = with_context)
{
    void *h;
    CUdeviceptr d;
    CU_OK(cuMemAllocHost(&h, 64));
    CU_OK(cuMemAlloc(&d, 64));
    memset(h, 5, 64);
    CUDA_MEMCPY2D c = {.srcMemoryType = CU_MEMORYTYPE_HOST,
                       .srcHost = h,
                       .srcPitch = 8,
                       .dstMemoryType = CU_MEMORYTYPE_DEVICE,
                       .dstDevice = d,
                       .dstPitch = 8,
                       .WidthInBytes = 3,
                       .Height = 8};
    CU_OK(cuMemcpy2DUnaligned(&c));
    cr_assert_eq(((char *)d)[58], 5);
    cr_assert_eq(((char *)d)[59], 0);
    CU_OK(cuMemFreeHost(h));
}
