/* bench_hook: the shim's added cost per cudaMalloc+cudaFree pair (and cuMemAlloc+cuMemFree)
 * through the real hooks on simcuda, as a program sees it: runs the loops bare, then re-runs
 * itself under LD_PRELOAD of the shim (stacks off with the trace on, the default 24-frame stacks
 * with the trace on, and the default: trace off) and prints CPU ns per pair (the fastest of
 * many batches), the ratio and the ns added. bench_alloc measures the core alone, hot in the
 * caches; this adds the interception layer (device query, recursion guard, the real call
 * through the table, the runtime's nested driver call) and a real allocator's effect on the
 * caches: simcuda maps and unmaps memory for every allocation (two mmap calls per pair, a few
 * microseconds), after which the lines the shim touches miss. The added time is therefore
 * several times bench_alloc's, and noisy; callgrind's instruction counts of the child with and
 * without LD_PRELOAD are the stable figure (README, "What the shim costs"). Asserts nothing
 * about time.
 *
 *     bench_hook LIBMEMSHIM [pairs]      (simcuda on LD_LIBRARY_PATH) */
#include "bench_preload.h"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Debian's valgrind package ships it; without it the warm-up is counted too (see below). */
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_TOGGLE_COLLECT
#endif

#define NLIVE    1000 /* a training job's buffers stay live around the measured pairs */
#define MAX_LIVE 100000
#define BATCH    500 /* pairs per timed batch */

/* CPU time of this thread: on a busy machine, time spent descheduled is not the shim's. */
static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Not inlined: bench/hook_callgrind.sh counts the instructions inside it (callgrind's
 * --toggle-collect), except in the warm-up call, which turns the count off again: its first
 * pair meets a new call site, and symbolizing and classifying that stack is paid once per
 * site, not per pair. */
__attribute__((noinline)) static int runtime_pairs(long n, int warm)
{
    if (warm)
        CALLGRIND_TOGGLE_COLLECT;
    int rc = 0;
    for (long i = 0; i < n && rc == 0; i++) {
        void *p;
        if (cudaMalloc(&p, 4000) != cudaSuccess || cudaFree(p) != cudaSuccess)
            rc = -1;
    }
    if (warm)
        CALLGRIND_TOGGLE_COLLECT;
    return rc;
}

__attribute__((noinline)) static int driver_pairs(long n)
{
    for (long i = 0; i < n; i++) {
        CUdeviceptr p;
        if (cuMemAlloc(&p, 4000) != CUDA_SUCCESS || cuMemFree(p) != CUDA_SUCCESS)
            return -1;
    }
    return 0;
}

/* ns per pair through the runtime and the driver, in this process. */
/* BENCH_HOOK_LIVE overrides NLIVE (bench/hook_callgrind.sh checks the cost is flat in it). */
static int live_count(void)
{
    const char *s = getenv("BENCH_HOOK_LIVE");
    int n = s ? atoi(s) : NLIVE;
    return n < 0 ? 0 : n > MAX_LIVE ? MAX_LIVE : n;
}

static int measure(long n, double *rt_ns, double *drv_ns)
{
    static void *live[MAX_LIVE];
    int nlive = live_count();
    /* The first pair loads the runtime, the driver and the shim's lookups: a one-time cost
     * that hook_callgrind.sh's per-pair counts must not carry. */
    void *first;
    if (cudaMalloc(&first, 4000) != cudaSuccess || cudaFree(first) != cudaSuccess)
        return -1;
    for (int i = 0; i < nlive; i++)
        if (cudaMalloc(&live[i], 4096 + 256 * (size_t)(i % 7)) != cudaSuccess)
            return -1;
    /* The fastest of many short batches: the noise (simcuda's system calls, the machine) only
     * ever adds time, so the minimum of each side converges where a mean does not. The
     * warm-up goes first through the same calls, so that the batches' stacks are known. */
    int rc = 0;
    double best_rt = 1e300, best_drv = 1e300;
    for (long done = 0, warming = 1; done < n && rc == 0; warming = 0) {
        long k = warming ? n / 10 + 1 : BATCH;
        /* Opaque to the compiler: it must not split the warm-up off into calls of its own (each
         * would be a call site of its own, new to the counted batches). */
        __asm__ volatile("" : "+r"(k), "+r"(warming));
        uint64_t t0 = now_ns();
        rc |= runtime_pairs(k, (int)warming);
        uint64_t t1 = now_ns();
        rc |= driver_pairs(k);
        uint64_t t2 = now_ns();
        if (warming)
            continue;
        done += BATCH;
        if ((double)(t1 - t0) / BATCH < best_rt)
            best_rt = (double)(t1 - t0) / BATCH;
        if ((double)(t2 - t1) / BATCH < best_drv)
            best_drv = (double)(t2 - t1) / BATCH;
    }
    *rt_ns = best_rt;
    *drv_ns = best_drv;
    for (int i = 0; i < nlive; i++)
        cudaFree(live[i]);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_hook LIBMEMSHIM [pairs]\n");
        return 2;
    }
    long n = argc > 2 ? atol(argv[2]) : 1000000;
    int child = bench_preload_child_main("BENCH_HOOK_CHILD", measure, n);
    if (child >= 0)
        return child;
    double rt, drv;
    if (measure(n, &rt, &drv) < 0) {
        fprintf(stderr, "bench_hook: simcuda allocation failed\n");
        return 1;
    }
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char off[512], on[512];
    snprintf(off, sizeof off, "MEMSHIM_STACK_DEPTH=0 MEMSHIM_TRACE=%s/bench_hook-%%p.mst", tmp);
    snprintf(on, sizeof on, "MEMSHIM_TRACE=%s/bench_hook-%%p.mst", tmp);
    const struct {
        const char *label, *env;
    } runs[] = {{"stacks off, trace on", off},
                {"24-frame stacks, trace on", on},
                {"default (trace off)", "MEMSHIM_TRACE="}};
    printf("alloc+free pairs of 4000 bytes, %d live allocations, %ld pairs\n", live_count(), n);
    printf("  %-26s cudaMalloc+cudaFree %7.1f ns   cuMemAlloc+cuMemFree %7.1f ns\n", "no shim", rt,
           drv);
    int status = 0;
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        double srt, sdrv;
        if (bench_preload_run("BENCH_HOOK_CHILD", argv[0], argv[1], n, runs[i].env, &srt, &sdrv) <
            0) {
            fprintf(stderr, "bench_hook: the run under the shim failed (%s)\n", runs[i].label);
            status = 1;
            continue;
        }
        printf("  %-26s cudaMalloc+cudaFree %7.1f ns (x%.2f, +%.0f ns)   cuMemAlloc+cuMemFree "
               "%7.1f ns (x%.2f, +%.0f ns)\n",
               runs[i].label, srt, srt / rt, srt - rt, sdrv, sdrv / drv, sdrv - drv);
    }
    char rm[512];
    snprintf(rm, sizeof rm, "rm -f %s/bench_hook-*.mst", tmp);
    if (system(rm) != 0)
        status = status ? status : 0;
    return status;
}
