/* clock: see clock.h. */
#include "clock.h"

#include "compat.h"

#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#define CLOCK_HAVE_TSC 1
#endif

#define CLOCK_CALIBRATE_NS 1000000u /* the rate's error is the pairs' spread over this */

static uint64_t clock_base;
static uint64_t clock_wall_base;
static int clock_tsc;            /* clock_now_ns reads the TSC */
static uint64_t clock_tsc0;      /* the TSC at clock_base */
static uint64_t clock_tsc_scale; /* nanoseconds per tick, << 32 */

static uint64_t clock_read(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#ifdef CLOCK_HAVE_TSC
__extension__ typedef unsigned __int128 clock_u128;

static int clock_tsc_trusted(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
        return 0;
    __cpuid(0x80000007u, a, b, c, d);
    if (!(d & (1u << 8))) /* invariant TSC */
        return 0;
    int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
                  O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char src[16] = {0};
    ssize_t n = read(fd, src, sizeof src - 1);
    close(fd);
    return n >= 4 && memcmp(src, "tsc\n", 4) == 0;
}

/* A TSC reading and the CLOCK_MONOTONIC time at it: the tightest bracket of a few tries. */
static void clock_pair(uint64_t *tsc, uint64_t *ns)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 8; i++) {
        uint64_t m0 = clock_read(CLOCK_MONOTONIC);
        uint64_t t = __rdtsc();
        uint64_t m1 = clock_read(CLOCK_MONOTONIC);
        if (m1 - m0 < best) {
            best = m1 - m0;
            *tsc = t;
            *ns = m0 + (m1 - m0) / 2;
        }
    }
}

/* Rate over about a millisecond; the base becomes the first pair's time. 0 when usable. */
static int clock_calibrate(void)
{
    uint64_t t0, n0, t1, n1;
    clock_pair(&t0, &n0);
    while (clock_read(CLOCK_MONOTONIC) - n0 < CLOCK_CALIBRATE_NS)
        ;
    clock_pair(&t1, &n1);
    if (t1 <= t0 || n1 <= n0)
        return -1;
    uint64_t scale = ((n1 - n0) << 32) / (t1 - t0);
    /* Between 0.05 and 10 ns per tick (20 GHz .. 100 MHz): anything else is not a TSC. */
    if (scale < (1ull << 32) / 20 || scale > (10ull << 32))
        return -1;
    clock_base = n0;
    clock_tsc0 = t0;
    clock_tsc_scale = scale;
    return 0;
}
#endif

void clock_init(void)
{
    clock_tsc = 0;
    clock_base = clock_read(CLOCK_MONOTONIC);
    clock_wall_base = clock_read(CLOCK_REALTIME);
#ifdef CLOCK_HAVE_TSC
    if (clock_tsc_trusted() && clock_calibrate() == 0) {
        clock_wall_base = clock_read(CLOCK_REALTIME) - (clock_read(CLOCK_MONOTONIC) - clock_base);
        clock_tsc = 1;
    }
#endif
}

uint64_t clock_base_ns(void)
{
    return clock_base;
}

uint64_t clock_wall_base_ns(void)
{
    return clock_wall_base;
}

int clock_uses_tsc(void)
{
    return clock_tsc;
}

MS_HOT uint64_t clock_now_ns(void)
{
#ifdef CLOCK_HAVE_TSC
    if (ms_likely(clock_tsc)) {
        int64_t d = (int64_t)(__rdtsc() - clock_tsc0);
        return d > 0 ? (uint64_t)(((clock_u128)(uint64_t)d * clock_tsc_scale) >> 32) : 0;
    }
#endif
    return clock_read(CLOCK_MONOTONIC) - clock_base;
}
