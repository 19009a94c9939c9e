/* The simulated driver's virtual-memory API, and faults on memory that is not mapped. */
#include <criterion/criterion.h>

#include <cuda.h>
#include <simcuda.h>

#include <signal.h>
#include <stdint.h>
#include <string.h>

#define CU_OK(call) cr_assert_eq((call), CUDA_SUCCESS, "%s", #call)
#define MIB         (1ull << 20)

static void with_context(void)
{
    CUcontext ctx;
    CU_OK(cuInit(0));
    CU_OK(cuDevicePrimaryCtxRetain(&ctx, 0));
    CU_OK(cuCtxSetCurrent(ctx));
}

static CUmemAllocationProp prop_at(CUmemLocationType type)
{
    return (CUmemAllocationProp){.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                 .location = {.type = type, .id = 0}};
}

static CUmemGenericAllocationHandle create(CUmemLocationType type, size_t size)
{
    CUmemAllocationProp prop = prop_at(type);
    CUmemGenericAllocationHandle h;
    CU_OK(cuMemCreate(&h, size, &prop, 0));
    return h;
}

static void map_rw(CUdeviceptr va, size_t size, CUmemGenericAllocationHandle h)
{
    CUmemAccessDesc rw = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0},
                          .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CU_OK(cuMemMap(va, size, 0, h, 0));
    CU_OK(cuMemSetAccess(va, size, &rw, 1));
}

TestSuite(vmm, .init = with_context);

Test(vmm, granularity_is_two_mib)
{
    size_t g = 0;
    CUmemAllocationProp dev = prop_at(CU_MEM_LOCATION_TYPE_DEVICE);
    CUmemAllocationProp host = prop_at(CU_MEM_LOCATION_TYPE_HOST);
    CU_OK(cuMemGetAllocationGranularity(&g, &dev, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    cr_assert_eq(g, 2 * MIB);
    CU_OK(cuMemGetAllocationGranularity(&g, &host, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    cr_assert_eq(g, 2 * MIB);
}

Test(vmm, create_charges_device_memory_and_release_returns_it)
{
    size_t free0, free1, total;
    CU_OK(cuMemGetInfo(&free0, &total));
    CUmemGenericAllocationHandle h = create(CU_MEM_LOCATION_TYPE_DEVICE, 4 * MIB);
    CU_OK(cuMemGetInfo(&free1, &total));
    cr_assert_eq(free0 - free1, 4 * MIB);
    CUmemAllocationProp got;
    CU_OK(cuMemGetAllocationPropertiesFromHandle(&got, h));
    cr_assert_eq(got.location.type, CU_MEM_LOCATION_TYPE_DEVICE);
    CU_OK(cuMemRelease(h));
    CU_OK(cuMemGetInfo(&free1, &total));
    cr_assert_eq(free0, free1);
    cr_assert_eq(cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);
    CUmemAllocationProp prop = prop_at(CU_MEM_LOCATION_TYPE_DEVICE);
    cr_assert_eq(cuMemCreate(&h, MIB, &prop, 0), CUDA_ERROR_INVALID_VALUE, "not granular");
}

Test(vmm, host_located_handles_do_not_count_as_device_memory)
{
    size_t free0, free1, total;
    CU_OK(cuMemGetInfo(&free0, &total));
    CUmemGenericAllocationHandle h = create(CU_MEM_LOCATION_TYPE_HOST, 2 * MIB);
    CUmemGenericAllocationHandle n = create(CU_MEM_LOCATION_TYPE_HOST_NUMA, 2 * MIB);
    CU_OK(cuMemGetInfo(&free1, &total));
    cr_assert_eq(free0, free1);
    CUdeviceptr va;
    CU_OK(cuMemAddressReserve(&va, 2 * MIB, 0, 0, 0));
    map_rw(va, 2 * MIB, h);
    memset((void *)va, 7, 2 * MIB);
    CUmemorytype type = 0;
    CU_OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, va));
    cr_assert_eq(type, CU_MEMORYTYPE_HOST);
    CUmemAllocationProp ipc = prop_at(CU_MEM_LOCATION_TYPE_HOST);
    ipc.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    cr_assert_eq(cuMemCreate(&h, 2 * MIB, &ipc, 0), CUDA_ERROR_INVALID_VALUE);
    CUmemAllocationProp current = prop_at(CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT);
    cr_assert_eq(cuMemCreate(&h, 2 * MIB, &current, 0), CUDA_ERROR_INVALID_VALUE);
    CUdeviceptr vn;
    CU_OK(cuMemAddressReserve(&vn, 2 * MIB, 0, 0, 0));
    CU_OK(cuMemMap(vn, 2 * MIB, 0, n, 0));
    CUmemAccessDesc numa = {.location = {.type = CU_MEM_LOCATION_TYPE_HOST_NUMA, .id = 0},
                            .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CU_OK(cuMemSetAccess(vn, 2 * MIB, &numa, 1));
    cr_assert_eq(cuMemSetAccess(va, 2 * MIB, &numa, 1), CUDA_ERROR_INVALID_VALUE,
                 "HOST_NUMA access to a HOST allocation");
    CU_OK(cuMemRelease(n));
}

Test(vmm, remap_to_another_handle_keeps_the_address_and_the_data)
{
    const size_t size = 4 * MIB;
    CUdeviceptr va, tmp;
    CU_OK(cuMemAddressReserve(&va, size, 0, 0, 0));
    CU_OK(cuMemAddressReserve(&tmp, size, 0, 0, 0));
    CUmemGenericAllocationHandle dev = create(CU_MEM_LOCATION_TYPE_DEVICE, size);
    map_rw(va, size, dev);
    for (size_t i = 0; i < size / 8; i++)
        ((uint64_t *)va)[i] = i * 2654435761u;
    /* spill: copy into a host handle mapped at a temporary address, then swap the backing */
    CUmemGenericAllocationHandle host = create(CU_MEM_LOCATION_TYPE_HOST, size);
    map_rw(tmp, size, host);
    CU_OK(cuMemcpyDtoD(tmp, va, size));
    CU_OK(cuMemUnmap(va, size));
    CU_OK(cuMemRelease(dev));
    map_rw(va, size, host);
    CU_OK(cuMemUnmap(tmp, size));
    for (size_t i = 0; i < size / 8; i++)
        cr_assert_eq(((uint64_t *)va)[i], i * 2654435761u);
    CUmemGenericAllocationHandle again;
    CU_OK(cuMemRetainAllocationHandle(&again, (void *)(va + 100)));
    cr_assert_eq(again, host);
    CU_OK(cuMemRelease(again));
}

Test(vmm, one_handle_at_two_addresses_shares_pages)
{
    CUdeviceptr a, b;
    CU_OK(cuMemAddressReserve(&a, 2 * MIB, 0, 0, 0));
    CU_OK(cuMemAddressReserve(&b, 2 * MIB, 0, 0, 0));
    CUmemGenericAllocationHandle h = create(CU_MEM_LOCATION_TYPE_DEVICE, 2 * MIB);
    map_rw(a, 2 * MIB, h);
    map_rw(b, 2 * MIB, h);
    CU_OK(cuMemRelease(h)); /* the mappings keep the memory */
    ((int *)a)[5] = 42;
    cr_assert_eq(((int *)b)[5], 42);
}

Test(vmm, adjacent_mappings_form_one_copyable_range)
{
    CUdeviceptr va;
    CU_OK(cuMemAddressReserve(&va, 4 * MIB, 0, 0, 0));
    CUmemGenericAllocationHandle h1 = create(CU_MEM_LOCATION_TYPE_DEVICE, 2 * MIB);
    CUmemGenericAllocationHandle h2 = create(CU_MEM_LOCATION_TYPE_HOST, 2 * MIB);
    CU_OK(cuMemMap(va, 2 * MIB, 0, h1, 0));
    CU_OK(cuMemMap(va + 2 * MIB, 2 * MIB, 0, h2, 0));
    CUmemAccessDesc rw = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0},
                          .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CU_OK(cuMemSetAccess(va, 4 * MIB, &rw, 1));
    unsigned long long flags = 0;
    CU_OK(cuMemGetAccess(&flags, &rw.location, va + 3 * MIB));
    cr_assert_eq(flags, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    CU_OK(cuMemsetD8(va + MIB, 9, 2 * MIB));
    cr_assert_eq(((unsigned char *)va)[3 * MIB - 1], 9);
    cr_assert_eq(cuMemUnmap(va, MIB), CUDA_ERROR_INVALID_VALUE, "a sub-range");
    CU_OK(cuMemUnmap(va, 4 * MIB));
    CU_OK(cuMemAddressFree(va, 4 * MIB));
}

Test(vmm, rules_of_map_and_reserve)
{
    CUdeviceptr va;
    CU_OK(cuMemAddressReserve(&va, 4 * MIB, 0, 0, 0));
    cr_assert_eq(va % (2 * MIB), 0);
    CUmemGenericAllocationHandle h = create(CU_MEM_LOCATION_TYPE_DEVICE, 2 * MIB);
    cr_assert_eq(cuMemMap(va, 2 * MIB, 4096, h, 0), CUDA_ERROR_INVALID_VALUE, "offset");
    cr_assert_eq(cuMemMap(va + 4 * MIB, 2 * MIB, 0, h, 0), CUDA_ERROR_INVALID_VALUE,
                 "outside the reservation");
    cr_assert_eq(cuMemMap(va, 4 * MIB, 0, h, 0), CUDA_ERROR_INVALID_VALUE, "bigger than handle");
    CU_OK(cuMemMap(va, 2 * MIB, 0, h, 0));
    cr_assert_eq(cuMemMap(va, 2 * MIB, 0, h, 0), CUDA_ERROR_INVALID_VALUE, "already mapped");
    char buf[8];
    cr_assert_eq(cuMemcpyDtoH(buf, va, 8), CUDA_ERROR_INVALID_VALUE, "no access set yet");
    cr_assert_eq(cuMemAddressFree(va, 4 * MIB), CUDA_ERROR_INVALID_VALUE, "still mapped");
    CUdeviceptr hinted;
    CU_OK(cuMemAddressReserve(&hinted, 2 * MIB, 0, va + 64 * MIB, 0));
    cr_assert_eq(hinted, va + 64 * MIB, "a free hint is honoured");
}

Test(host_vmm, can_be_switched_off)
{
    setenv("SIMCUDA_HOST_VMM", "0", 1);
    with_context();
    int v = 1;
    CU_OK(
        cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0));
    cr_assert_eq(v, 0);
    CUmemAllocationProp prop = prop_at(CU_MEM_LOCATION_TYPE_HOST);
    CUmemGenericAllocationHandle h;
    cr_assert_eq(cuMemCreate(&h, 2 * MIB, &prop, 0), CUDA_ERROR_NOT_SUPPORTED);
}

/* Faults: a kernel is a host function, so touching memory that is not mapped faults as an
 * illegal address does on a GPU. Criterion runs each test in its own process. */
TestSuite(fault, .init = with_context);

static void touch(void **params, const simcuda_launch *l)
{
    (void)l;
    volatile int *p = *(int **)params[0];
    p[0] = 1;
}

static void launch_touch(CUdeviceptr p)
{
    const size_t sizes[] = {sizeof(void *)};
    CUfunction f;
    CU_OK(simcuRegisterKernel(touch, "touch", 1, sizes, &f));
    void *params[] = {&p};
    cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL);
}

Test(fault, kernel_on_live_memory_does_not_fault)
{
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 256));
    launch_touch(p);
    cr_assert_eq(*(int *)p, 1);
}

Test(fault, use_after_free, .signal = SIGSEGV)
{
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 256));
    CU_OK(cuMemFree(p));
    launch_touch(p);
}

Test(fault, use_after_free_async, .signal = SIGSEGV)
{
    CUdeviceptr p;
    CU_OK(cuMemAllocAsync(&p, 256, NULL));
    CU_OK(cuMemFreeAsync(p, NULL));
    launch_touch(p);
}

Test(fault, reserved_but_unmapped, .signal = SIGSEGV)
{
    CUdeviceptr va;
    CU_OK(cuMemAddressReserve(&va, 2 * MIB, 0, 0, 0));
    launch_touch(va);
}

Test(fault, mapped_without_access, .signal = SIGSEGV)
{
    CUdeviceptr va;
    CU_OK(cuMemAddressReserve(&va, 2 * MIB, 0, 0, 0));
    CU_OK(cuMemMap(va, 2 * MIB, 0, create(CU_MEM_LOCATION_TYPE_DEVICE, 2 * MIB), 0));
    launch_touch(va);
}

Test(fault, after_unmap, .signal = SIGSEGV)
{
    CUdeviceptr va;
    CUmemGenericAllocationHandle h = create(CU_MEM_LOCATION_TYPE_DEVICE, 2 * MIB);
    CU_OK(cuMemAddressReserve(&va, 2 * MIB, 0, 0, 0));
    map_rw(va, 2 * MIB, h);
    launch_touch(va);
    CU_OK(cuMemUnmap(va, 2 * MIB));
    launch_touch(va);
}

Test(fault, write_to_read_only_mapping, .signal = SIGSEGV)
{
    CUdeviceptr va;
    CUmemAccessDesc ro = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0},
                          .flags = CU_MEM_ACCESS_FLAGS_PROT_READ};
    CU_OK(cuMemAddressReserve(&va, 2 * MIB, 0, 0, 0));
    CU_OK(cuMemMap(va, 2 * MIB, 0, create(CU_MEM_LOCATION_TYPE_DEVICE, 2 * MIB), 0));
    CU_OK(cuMemSetAccess(va, 2 * MIB, &ro, 1));
    cr_assert_eq(((volatile int *)va)[0], 0, "reads are allowed");
    launch_touch(va);
}
