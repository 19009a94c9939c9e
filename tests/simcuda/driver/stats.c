#include "stats.h"

#include "env.h"
#include "export.h"

#include <simcuda.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define DEFAULT_CAPACITY (16ull << 30)

static struct {
    _Atomic uint64_t used[2];
    _Atomic uint64_t peak[2];
    _Atomic uint64_t allocations, frees, failed_allocations;
    _Atomic uint64_t kernel_launches, gemm_calls;
    _Atomic uint64_t copied[4];
} counters;

static uint64_t capacity;
static pthread_once_t capacity_once = PTHREAD_ONCE_INIT;

static void read_capacity(void)
{
    capacity = env_bytes("SIMCUDA_DEVICE_MEMORY", DEFAULT_CAPACITY);
}

uint64_t stats_capacity(void)
{
    pthread_once(&capacity_once, read_capacity);
    return capacity;
}

uint64_t stats_used(enum stats_place place)
{
    return atomic_load(&counters.used[place]);
}

static void raise_peak(enum stats_place place, uint64_t now)
{
    uint64_t peak = atomic_load(&counters.peak[place]);
    while (now > peak && !atomic_compare_exchange_weak(&counters.peak[place], &peak, now))
        ;
}

bool stats_charge(enum stats_place place, uint64_t bytes)
{
    uint64_t limit = place == STATS_DEVICE ? stats_capacity() : UINT64_MAX;
    uint64_t used = atomic_load(&counters.used[place]);
    do {
        if (bytes > limit - used) {
            atomic_fetch_add(&counters.failed_allocations, 1);
            return false;
        }
    } while (!atomic_compare_exchange_weak(&counters.used[place], &used, used + bytes));
    raise_peak(place, used + bytes);
    atomic_fetch_add(&counters.allocations, 1);
    return true;
}

void stats_refund(enum stats_place place, uint64_t bytes)
{
    atomic_fetch_sub(&counters.used[place], bytes);
    atomic_fetch_sub(&counters.allocations, 1);
    atomic_fetch_add(&counters.failed_allocations, 1);
}

void stats_uncharge(enum stats_place place, uint64_t bytes)
{
    atomic_fetch_sub(&counters.used[place], bytes);
    atomic_fetch_add(&counters.frees, 1);
}

void stats_count_copy(enum stats_copy kind, uint64_t bytes)
{
    atomic_fetch_add(&counters.copied[kind], bytes);
}

void stats_count_kernel(void)
{
    atomic_fetch_add(&counters.kernel_launches, 1);
}

SIMCU_EXPORT void simcuStatsAdd(int counter, uint64_t n)
{
    if (counter == SIMCU_COUNTER_GEMM_CALLS)
        atomic_fetch_add(&counters.gemm_calls, n);
    else if (counter == SIMCU_COUNTER_KERNEL_LAUNCHES)
        atomic_fetch_add(&counters.kernel_launches, n);
}

static _Atomic pid_t owner; /* 0 until cuInit: then the process that may write the file */

void stats_claim_process(void)
{
    pid_t none = 0;
    atomic_compare_exchange_strong(&owner, &none, getpid());
}

bool stats_write(const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return false;
    fprintf(f,
            "{\"device_capacity\": %llu, \"peak_device_bytes\": %llu, "
            "\"device_bytes_at_exit\": %llu, \"host_bytes_peak\": %llu, "
            "\"host_bytes_at_exit\": %llu, \"allocations\": %llu, \"frees\": %llu, "
            "\"failed_allocations\": %llu, \"kernel_launches\": %llu, \"gemm_calls\": %llu, "
            "\"bytes_copied_h2d\": %llu, \"bytes_copied_d2h\": %llu, "
            "\"bytes_copied_d2d\": %llu, \"bytes_copied_h2h\": %llu}\n",
            (unsigned long long)stats_capacity(),
            (unsigned long long)atomic_load(&counters.peak[STATS_DEVICE]),
            (unsigned long long)atomic_load(&counters.used[STATS_DEVICE]),
            (unsigned long long)atomic_load(&counters.peak[STATS_HOST]),
            (unsigned long long)atomic_load(&counters.used[STATS_HOST]),
            (unsigned long long)atomic_load(&counters.allocations),
            (unsigned long long)atomic_load(&counters.frees),
            (unsigned long long)atomic_load(&counters.failed_allocations),
            (unsigned long long)atomic_load(&counters.kernel_launches),
            (unsigned long long)atomic_load(&counters.gemm_calls),
            (unsigned long long)atomic_load(&counters.copied[STATS_COPY_H2D]),
            (unsigned long long)atomic_load(&counters.copied[STATS_COPY_D2H]),
            (unsigned long long)atomic_load(&counters.copied[STATS_COPY_D2D]),
            (unsigned long long)atomic_load(&counters.copied[STATS_COPY_H2H]));
    return fclose(f) == 0;
}

/* A destructor, not atexit: it runs on exit() from any thread (and on the last dlclose),
 * after every atexit handler and after the destructors of libraries loaded after libcuda;
 * frees made later by destructors of earlier-loaded libraries are not in the file. */
__attribute__((destructor)) static void write_stats_at_exit(void)
{
    const char *path = getenv("SIMCUDA_STATS");
    pid_t claimed = atomic_load(&owner);
    if (claimed && claimed != getpid())
        return;
    if (path && *path && !stats_write(path))
        fprintf(stderr, "simcuda: cannot write SIMCUDA_STATS=%s\n", path);
}
