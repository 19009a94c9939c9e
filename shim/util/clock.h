/* clock: trace timestamps, nanoseconds since the shim was loaded, on CLOCK_MONOTONIC's scale.
 *
 * Read from the TSC (a few ns, no vDSO call) when it is safe: the CPU says its TSC is
 * invariant (constant rate, never stops) and the kernel itself keeps CLOCK_MONOTONIC on the
 * TSC (so it found the TSCs synchronised across CPUs; a thread's timestamps stay monotonic
 * when it migrates). Its rate is calibrated against CLOCK_MONOTONIC at load. Otherwise, and
 * off x86-64, clock_gettime(CLOCK_MONOTONIC). */
#ifndef MEMSHIM_CLOCK_H
#define MEMSHIM_CLOCK_H

#include <stdint.h>

/* Take the base and choose the source: once at load (calibrating takes about a millisecond).
 * Both bases go into the trace header. */
void clock_init(void);
uint64_t clock_base_ns(void);
uint64_t clock_wall_base_ns(void);
/* Nanoseconds since clock_init (no system call). */
uint64_t clock_now_ns(void);
/* 1 when clock_now_ns reads the TSC. */
int clock_uses_tsc(void);

#endif /* MEMSHIM_CLOCK_H */
