/* Helper of test_sim_driver_limits: a known sequence of driver calls, then exit() from a
 * second thread, so the test can check the SIMCUDA_STATS file written at exit. */
#include <cuda.h>
#include <simcuda.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
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

/* A child forked after cuInit inherits the counters; its exit must not write the file. */
static int forked_child_leaves_the_file_alone(void)
{
    const char *path = getenv("SIMCUDA_STATS");
    unlink(path);
    pid_t pid = fork();
    if (pid == 0)
        exit(0);
    int status;
    waitpid(pid, &status, 0);
    return access(path, F_OK) == 0 ? 4 : 0;
}

int main(int argc, char **argv)
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
    if (argc > 1 && strcmp(argv[1], "fork") == 0 && forked_child_leaves_the_file_alone())
        return 4;
    pthread_t t;
    pthread_create(&t, NULL, exit_from_thread, NULL);
    for (;;)
        pause();
}
