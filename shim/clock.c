/* clock: see clock.h. */
#include "clock.h"

#include <time.h>

static uint64_t clock_base;
static uint64_t clock_wall_base;

static uint64_t clock_read(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void clock_init(void)
{
    clock_base = clock_read(CLOCK_MONOTONIC);
    clock_wall_base = clock_read(CLOCK_REALTIME);
}

uint64_t clock_base_ns(void)
{
    return clock_base;
}

uint64_t clock_wall_base_ns(void)
{
    return clock_wall_base;
}

uint64_t clock_now_ns(void)
{
    return clock_read(CLOCK_MONOTONIC) - clock_base;
}
