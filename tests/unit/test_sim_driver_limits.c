/* The simulated driver's capacity (SIMCUDA_DEVICE_MEMORY=64m for this test) on every
 * allocation path, thread safety of the accounting, and the SIMCUDA_STATS file. */
#include <criterion/criterion.h>

#include <cuda.h>
#include <simcuda.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CU_OK(call) cr_assert_eq((call), CUDA_SUCCESS, "%s", #call)
#define MIB         (1ull << 20)
#define CAPACITY    (64 * MIB)

static void with_context(void)
{
    CUcontext ctx;
    CU_OK(cuInit(0));
    CU_OK(cuDevicePrimaryCtxRetain(&ctx, 0));
    CU_OK(cuCtxSetCurrent(ctx));
}

TestSuite(capacity, .init = with_context);

Test(capacity, reported_by_queries)
{
    size_t total, free;
    CU_OK(cuDeviceTotalMem(&total, 0));
    cr_assert_eq(total, CAPACITY);
    CU_OK(cuMemGetInfo(&free, &total));
    cr_assert_eq(free, CAPACITY);
}

Test(capacity, exactly_full_then_out_of_memory_on_every_path)
{
    CUdeviceptr p, q;
    size_t pitch;
    CU_OK(cuMemAlloc(&p, CAPACITY));
    cr_assert_eq(cuMemAlloc(&q, 1), CUDA_ERROR_OUT_OF_MEMORY);
    cr_assert_eq(cuMemAllocPitch(&q, &pitch, 4, 1, 4), CUDA_ERROR_OUT_OF_MEMORY);
    cr_assert_eq(cuMemAllocManaged(&q, 1, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_OUT_OF_MEMORY);
    cr_assert_eq(cuMemAllocAsync(&q, 1, NULL), CUDA_ERROR_OUT_OF_MEMORY);
    CUmemoryPool pool;
    CU_OK(cuDeviceGetDefaultMemPool(&pool, 0));
    cr_assert_eq(cuMemAllocFromPoolAsync(&q, 1, pool, NULL), CUDA_ERROR_OUT_OF_MEMORY);
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE}};
    CUmemGenericAllocationHandle h;
    cr_assert_eq(cuMemCreate(&h, 2 * MIB, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
    /* host-located memory is not limited by the device's capacity */
    prop.location.type = CU_MEM_LOCATION_TYPE_HOST;
    CU_OK(cuMemCreate(&h, 2 * MIB, &prop, 0));
    CU_OK(cuMemFree(p));
    CU_OK(cuMemAlloc(&q, 1));
}

Test(capacity, charges_are_rounded_to_256_bytes)
{
    CUdeviceptr p[256];
    for (int i = 0; i < 256; i++)
        CU_OK(cuMemAlloc(&p[i], CAPACITY / 256 - 255)); /* charged CAPACITY / 256 each */
    CUdeviceptr q;
    cr_assert_eq(cuMemAlloc(&q, 1), CUDA_ERROR_OUT_OF_MEMORY);
}

#define THREADS 8
#define ROUNDS  200

static void *churn(void *arg)
{
    CUcontext ctx = arg;
    CUdeviceptr p[4];
    if (cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
        return (void *)1;
    for (int r = 0; r < ROUNDS; r++) {
        for (int i = 0; i < 4; i++)
            if (cuMemAlloc(&p[i], MIB) != CUDA_SUCCESS)
                return (void *)1;
        for (int i = 0; i < 4; i++)
            if (cuMemFree(p[i]) != CUDA_SUCCESS)
                return (void *)1;
    }
    return NULL;
}

Test(capacity, concurrent_allocations_balance)
{
    CUcontext ctx;
    CU_OK(cuCtxGetCurrent(&ctx));
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, churn, ctx);
    for (int i = 0; i < THREADS; i++) {
        void *rc;
        pthread_join(t[i], &rc);
        cr_assert_null(rc);
    }
    size_t free, total;
    CU_OK(cuMemGetInfo(&free, &total));
    cr_assert_eq(free, CAPACITY);
}

static void *fill(void *arg)
{
    CUcontext ctx = arg;
    CUdeviceptr p;
    uintptr_t n = 0;
    cuCtxSetCurrent(ctx);
    while (cuMemAlloc(&p, MIB) == CUDA_SUCCESS)
        n++;
    return (void *)n;
}

Test(capacity, concurrent_allocations_never_exceed_capacity)
{
    CUcontext ctx;
    CU_OK(cuCtxGetCurrent(&ctx));
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, fill, ctx);
    uintptr_t total = 0;
    for (int i = 0; i < THREADS; i++) {
        void *n;
        pthread_join(t[i], &n);
        total += (uintptr_t)n;
    }
    cr_assert_eq(total, CAPACITY / MIB);
}

/* The value of "key": N in a flat JSON object, or -1. */
static long long json_value(const char *json, const char *key)
{
    char pattern[64];
    snprintf(pattern, sizeof(pattern), "\"%s\":", key);
    const char *at = strstr(json, pattern);
    return at ? strtoll(at + strlen(pattern), NULL, 10) : -1;
}

/* Runs the helper program with SIMCUDA_STATS set; returns the file's contents. */
static void run_child(const char *mode, char *json, size_t size)
{
    char path[] = "/tmp/simcuda-stats-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    char child[4096];
    snprintf(child, sizeof(child), "%s/tests/test_sim_driver_stats_child",
             getenv("MEMSHIM_BUILD_DIR"));
    pid_t pid = fork();
    if (pid == 0) {
        setenv("SIMCUDA_STATS", path, 1);
        execl(child, child, mode, (char *)NULL);
        _exit(127);
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    memset(json, 0, size);
    cr_assert_gt(fread(json, 1, size - 1, f), 0);
    fclose(f);
    unlink(path);
}

Test(stats, written_at_exit_from_any_thread)
{
    char json[4096];
    run_child("plain", json, sizeof(json));
    const long long two_mib = 2 * MIB;
    cr_assert_eq(json_value(json, "peak_device_bytes"), 4096 + two_mib, "%s", json);
    cr_assert_eq(json_value(json, "device_bytes_at_exit"), 4096 + two_mib);
    cr_assert_eq(json_value(json, "host_bytes_at_exit"), two_mib);
    cr_assert_eq(json_value(json, "allocations"), 4);
    cr_assert_eq(json_value(json, "frees"), 1);
    cr_assert_eq(json_value(json, "failed_allocations"), 1);
    cr_assert_eq(json_value(json, "kernel_launches"), 1);
    cr_assert_eq(json_value(json, "gemm_calls"), 3);
    cr_assert_eq(json_value(json, "bytes_copied_h2d"), 100);
    cr_assert_eq(json_value(json, "bytes_copied_d2h"), 50);
    cr_assert_eq(json_value(json, "device_capacity"), CAPACITY);
}

Test(stats, only_the_initialising_process_writes)
{
    char json[4096];
    run_child("fork", json, sizeof(json)); /* the helper fails if its forked child wrote */
    cr_assert_eq(json_value(json, "gemm_calls"), 3);
}
