/* bench_alloc: the shim core's added cost per allocation+free pair, as a hook pays it
 * (track_alloc_begin, track_alloc_end, track_free, trace records included), with call stacks
 * off and with MEMSHIM_STACK_DEPTH frames (default 24) captured from a deep stack. Printed as
 * the calling thread's CPU ns per pair (a busy machine's descheduling is not the shim's; the
 * trace's flusher thread runs apart), wall-clock ns beside it, and a ratio against the same
 * loop calling empty functions.
 *
 *     bench_alloc [pairs [base|off|on|all [live]]]   (MEMSHIM_TRACE defaults to a file in $TMPDIR)
 *
 * `live`: that many allocations stay live throughout, interleaved with the measured ones, so
 * each pair inserts into and removes from the middle of a populated registry (a training
 * job holds thousands of buffers) instead of an empty one.
 *
 * With a mode, only that loop runs: for instruction counts under callgrind, whose totals
 * are stable on noisy machines (subtract a run with 0 pairs). */
#include "callsite.h"
#include "track.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct cost {
    double cpu, wall; /* ns per pair */
};

/* Stand-ins for the real allocator, so the baseline loop has the same shape. */
__attribute__((noinline)) static int fake_alloc(uint64_t *addr, uint64_t i)
{
    *addr = 0x700000000000ull + ((i & 4095) << 9);
    __asm__ volatile("" ::: "memory");
    return 0;
}

__attribute__((noinline)) static void fake_free(uint64_t addr)
{
    __asm__ volatile("" : : "r"(addr) : "memory");
}

__attribute__((noinline)) static void pair_plain(uint64_t i)
{
    uint64_t addr;
    fake_alloc(&addr, i);
    fake_free(addr);
}

/* What a hook does around the real calls. */
__attribute__((noinline)) static void pair_tracked(uint64_t i)
{
    struct track_ticket t;
    uint64_t addr;
    if (track_alloc_begin(&t, 0, MST_KIND_CUDA_MALLOC, 4096, 4000) < 0)
        return;
    int ok = fake_alloc(&addr, i) == 0;
    track_alloc_end(&t, ok, 0, addr, 0);
    track_free(addr, MST_KIND_CUDA_MALLOC, 0);
    fake_free(addr);
}

static struct cost run(void (*pair)(uint64_t), uint64_t n)
{
    for (uint64_t i = 0; i < n / 10 + 1; i++) /* warm up: interning, page faults */
        pair(i);
    uint64_t c0 = now_ns(CLOCK_THREAD_CPUTIME_ID), w0 = now_ns(CLOCK_MONOTONIC);
    for (uint64_t i = 0; i < n; i++)
        pair(i);
    uint64_t w1 = now_ns(CLOCK_MONOTONIC), c1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
    return (struct cost){n ? (double)(c1 - c0) / (double)n : 0,
                         n ? (double)(w1 - w0) / (double)n : 0};
}

struct deep {
    void (*pair)(uint64_t);
    uint64_t n;
    struct cost ns;
};

/* Recurse so the measured calls sit below `levels` frames, as in a real framework. */
__attribute__((noinline)) static void at_depth(int levels, struct deep *d)
{
    if (levels > 0) {
        at_depth(levels - 1, d);
        __asm__ volatile("" ::: "memory"); /* not a tail call */
        return;
    }
    d->ns = run(d->pair, d->n);
}

static struct cost run_deep(void (*pair)(uint64_t), uint64_t n)
{
    struct deep d = {pair, n, {0, 0}};
    at_depth(40, &d);
    return d.ns;
}

static int want(const char *mode, const char *name)
{
    return !mode || strcmp(mode, name) == 0;
}

int main(int argc, char **argv)
{
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 2000000;
    const char *mode = argc > 2 && strcmp(argv[2], "all") != 0 ? argv[2] : NULL;
    uint64_t live = argc > 3 ? strtoull(argv[3], NULL, 10) : 0;
    char path[256] = "";
    if (!getenv("MEMSHIM_TRACE")) {
        const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
        snprintf(path, sizeof path, "%s/bench_alloc-%d.mst", tmp, (int)getpid());
        setenv("MEMSHIM_TRACE", path, 1);
    }
    track_init();
    track_device_info(0, "bench", 80ull << 30, 9, 0);
    for (uint64_t k = 0; k < live; k++) { /* between the measured addresses (512-byte steps) */
        struct track_ticket t;
        if (track_alloc_begin(&t, 0, MST_KIND_CUDA_MALLOC, 256, 256) == 0)
            track_alloc_end(&t, 1, 0, 0x700000000000ull + ((k % 4096) << 9) + 256 + (k / 4096) * 8,
                            0);
    }
    unsigned depth =
        getenv("MEMSHIM_STACK_DEPTH") ? (unsigned)atoi(getenv("MEMSHIM_STACK_DEPTH")) : 24;
    struct cost base = {0, 0}, off = {0, 0}, on = {0, 0};
    if (want(mode, "base"))
        base = run_deep(pair_plain, n);
    if (want(mode, "off")) {
        callsite_init(0, 2);
        track_settle_paths();
        off = run_deep(pair_tracked, n);
    }
    if (want(mode, "on")) {
        callsite_init(depth ? depth : 24, 2);
        track_settle_paths();
        on = run_deep(pair_tracked, n);
    }
    track_flush();
    printf("bench_alloc: %llu alloc+free pairs, trace %s\n", (unsigned long long)n,
           getenv("MEMSHIM_TRACE"));
    printf("  %-24s %8s %8s %8s %7s\n", "cpu ns per pair", "", "added", "wall", "ratio");
    printf("  %-24s %8.1f %8s %8.1f\n", "without the shim", base.cpu, "", base.wall);
    printf("  %-24s %8.1f %8.1f %8.1f %6.1fx\n", "stacks off", off.cpu, off.cpu - base.cpu,
           off.wall, base.cpu > 0 ? off.cpu / base.cpu : 0);
    char on_name[32];
    snprintf(on_name, sizeof on_name, "stacks on (%u frames)", depth ? depth : 24);
    printf("  %-24s %8.1f %8.1f %8.1f %6.1fx\n", on_name, on.cpu, on.cpu - base.cpu, on.wall,
           base.cpu > 0 ? on.cpu / base.cpu : 0);
    if (path[0])
        unlink(path);
    return 0;
}
