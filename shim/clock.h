/* clock: trace timestamps, nanoseconds since the shim was loaded (CLOCK_MONOTONIC). */
#ifndef MEMSHIM_CLOCK_H
#define MEMSHIM_CLOCK_H

#include <stdint.h>

/* Take the base: once at load. Both bases go into the trace header. */
void clock_init(void);
uint64_t clock_base_ns(void);
uint64_t clock_wall_base_ns(void);
/* Nanoseconds since clock_init (vDSO clock_gettime: no system call). */
uint64_t clock_now_ns(void);

#endif /* MEMSHIM_CLOCK_H */
