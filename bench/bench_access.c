/* bench_access: the cost access tracking adds to a kernel launch with 8 pointer parameters
 * (each in its own tracked allocation, among 1000 live ones), through cudaLaunchKernel and
 * cuLaunchKernel on simcuda. Runs the loops bare, then re-runs itself under LD_PRELOAD of the
 * shim (trace off, the default, and trace on) and prints CPU ns per launch, the ratio and the
 * ns added. Asserts nothing about time.
 *
 *     bench_access LIBMEMSHIM [launches]      (simcuda on LD_LIBRARY_PATH) */
#include "bench_preload.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <simcuda.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NPTR   8
#define NALLOC 1000

static void k_noop(void **params, const simcuda_launch *l)
{
    (void)params, (void)l;
}

/* CPU time of this thread: on a busy machine, time spent descheduled is not the shim's. */
static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ns per launch through the runtime and the driver, in this process. */
static int measure(long n, double *rt_ns, double *drv_ns)
{
    size_t sizes[NPTR];
    for (int i = 0; i < NPTR; i++)
        sizes[i] = sizeof(void *);
    CUfunction f;
    if (simcudaRegisterKernel(k_noop, "k_noop", NPTR, sizes) != cudaSuccess ||
        simcuRegisterKernel(k_noop, "k_noop", NPTR, sizes, &f) != CUDA_SUCCESS)
        return -1;
    static void *bufs[NALLOC];
    for (int i = 0; i < NALLOC; i++)
        if (cudaMalloc(&bufs[i], 4096 + 256 * (size_t)(i % 7)) != cudaSuccess)
            return -1;
    void *ptrs[NPTR];
    void *args[NPTR];
    for (int i = 0; i < NPTR; i++) {
        ptrs[i] = (char *)bufs[i * (NALLOC / NPTR)] + 64; /* inside, not at the base */
        args[i] = &ptrs[i];
    }
    dim3 one = {1, 1, 1};
    for (long i = 0; i < n / 10 + 1; i++) /* warm up: the function's layout is learnt once */
        cudaLaunchKernel((const void *)k_noop, one, one, args, 0, NULL);
    uint64_t t0 = now_ns();
    for (long i = 0; i < n; i++)
        cudaLaunchKernel((const void *)k_noop, one, one, args, 0, NULL);
    uint64_t t1 = now_ns();
    for (long i = 0; i < n / 10 + 1; i++)
        cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL);
    uint64_t t2 = now_ns();
    for (long i = 0; i < n; i++)
        cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL);
    uint64_t t3 = now_ns();
    *rt_ns = (double)(t1 - t0) / (double)n;
    *drv_ns = (double)(t3 - t2) / (double)n;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_access LIBMEMSHIM [launches]\n");
        return 2;
    }
    long n = argc > 2 ? atol(argv[2]) : 1000000;
    int child = bench_preload_child_main("BENCH_ACCESS_CHILD", measure, n);
    if (child >= 0)
        return child;
    double rt, drv;
    if (measure(n, &rt, &drv) < 0) {
        fprintf(stderr, "bench_access: simcuda setup failed\n");
        return 1;
    }
    char trace[256];
    snprintf(trace, sizeof trace, "MEMSHIM_TRACE=%s/bench_access-%%p.mst",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    static const struct {
        const char *label, *env;
    } runs[] = {{"shim, trace off (default)", "MEMSHIM_TRACE="},
                {"shim, trace on", NULL},
                {"shim, MEMSHIM_ACCESS=off", "MEMSHIM_TRACE= MEMSHIM_ACCESS=off"}};
    printf("kernel launch with %d pointer parameters, %d live allocations, %ld launches\n", NPTR,
           NALLOC, n);
    printf("  %-28s cudaLaunchKernel %8.1f ns   cuLaunchKernel %8.1f ns\n", "no shim", rt, drv);
    int status = 0;
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        double srt, sdrv;
        if (bench_preload_run("BENCH_ACCESS_CHILD", argv[0], argv[1], n,
                              runs[i].env ? runs[i].env : trace, &srt, &sdrv) < 0) {
            fprintf(stderr, "bench_access: the run under the shim failed (%s)\n", runs[i].label);
            status = 1;
            continue;
        }
        printf("  %-28s cudaLaunchKernel %8.1f ns (x%.2f, +%.0f ns)   cuLaunchKernel %8.1f ns "
               "(x%.2f, +%.0f ns)\n",
               runs[i].label, srt, srt / rt, srt - rt, sdrv, sdrv / drv, sdrv - drv);
    }
    if (!getenv("BENCH_ACCESS_KEEP")) {
        char rm[512];
        snprintf(rm, sizeof rm, "rm -f %s/bench_access-*.mst",
                 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (system(rm) != 0)
            status = status ? status : 0;
    }
    return status;
}
