/* Helper of test_sim_driver_limits: a known sequence of driver calls, then exit() from a
 * second thread, so the test can check the SIMCUDA_STATS file written at exit. */
#include <cuda.h>
#include <simcuda.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        if ((call) != CUDA_SUCCESS) {                                                              \
            fprintf(stderr, "failed: %s\n", #call);                                                \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

static void nop(void **params, const simcuda_launch *l)
{
    (void)params;
    (void)l;
}

static void *exit_from_thread(void *arg)
{
    (void)arg;
    exit(0);
}

int main(void)
{
    CUcontext ctx;
    CUdeviceptr a, b, big;
    CHECK(cuInit(0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, 0));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuMemAlloc(&a, 1000)); /* charged 1024 */
    CHECK(cuMemAlloc(&b, 4096));
    CHECK(cuMemFree(a));
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE}};
    CUmemGenericAllocationHandle dev, host;
    CHECK(cuMemCreate(&dev, 2 << 20, &prop, 0));
    prop.location.type = CU_MEM_LOCATION_TYPE_HOST;
    CHECK(cuMemCreate(&host, 2 << 20, &prop, 0));
    if (cuMemAlloc(&big, 1ull << 40) != CUDA_ERROR_OUT_OF_MEMORY)
        return 3;
    char buf[100] = {0};
    CHECK(cuMemcpyHtoD(b, buf, 100));
    CHECK(cuMemcpyDtoH(buf, b, 50));
    CUfunction f;
    CHECK(simcuRegisterKernel(nop, "nop", 0, NULL, &f));
    CHECK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    simcuStatsAdd(SIMCU_COUNTER_GEMM_CALLS, 3);
    pthread_t t;
    pthread_create(&t, NULL, exit_from_thread, NULL);
    for (;;)
        pause();
}
