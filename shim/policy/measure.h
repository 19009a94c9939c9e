/* measure: what moving and recomputing cost on a device, for MEMSHIM_POLICY=auto. Measured
 * once per device, on first need (never at load: the driver may not be ready), through the
 * real driver and cuBLAS only, so that nothing of it is charged or traced as the program's:
 *
 *   - host link: a copy of MEASURE_LINK_BYTES between page-locked host memory (cuMemHostAlloc;
 *     mapped pages when that fails) and device memory (cuMemAlloc), each way, the best of
 *     MEASURE_LINK_TRIES (the first one pays for first touches);
 *   - GEMM: one SGEMM on a cuBLAS handle of our own, timed to a context synchronize; square,
 *     from 64 up, doubled until one call takes MEASURE_GEMM_MIN_NS (or 2048): a small GEMM on
 *     a fast GPU measures launch latency, a large one on simcuda (a CPU) takes seconds. Only
 *     when cuBLAS is in the process (the shim never loads it); else the rate stays unknown
 *     and is measured when a later query finds cuBLAS loaded.
 *
 * MEMSHIM_COSTS (costs_parse.h) forces any of the three rates; those are not measured. Each
 * measurement logs one MST_REC_MEASURE record for the device (a second one when the GEMM rate
 * is learnt later; the latest record of a device holds all it knows).
 *
 * Queries after the first measurement are atomic loads and arithmetic: no system call, no
 * lock, no allocation. */
#ifndef MEMSHIM_MEASURE_H
#define MEMSHIM_MEASURE_H

#include <stdint.h>

#define MEASURE_LINK_BYTES  (4ull << 20)
#define MEASURE_LINK_TRIES  3
#define MEASURE_GEMM_MIN_NS 250000ull /* 0.25 ms */
#define MEASURE_GEMM_MAX_N  2048
/* Device memory a cuBLAS handle is assumed to take until it says otherwise (cuMemGetInfo). */
#define MEASURE_GEMM_WORKSPACE (4ull << 20)

/* Cost when a rate is unknown (measurement failed or cuBLAS absent): never the cheaper one. */
#define MEASURE_UNKNOWN_NS UINT64_MAX /* == COSTS_UNKNOWN_NS */

struct measure_costs {
    uint64_t h2d_bytes_per_s;  /* 0: unknown */
    uint64_t d2h_bytes_per_s;  /* 0: unknown */
    uint64_t gemm_flops_per_s; /* 0: unknown (no cuBLAS in the process yet) */
    uint64_t link_ns;          /* time the link measurement took (0: forced or not done) */
    uint64_t gemm_ns;          /* time the GEMM measurement took (0: forced or not done) */
    uint32_t gemm_n;           /* size of the timed SGEMM (n x n x n); 0 when not measured */
    uint8_t forced;            /* MEASURE_F_*: rates that came from MEMSHIM_COSTS */
};

#define MEASURE_F_H2D  (1u << 0)
#define MEASURE_F_D2H  (1u << 1)
#define MEASURE_F_GEMM (1u << 2)

/* Read MEMSHIM_COSTS (after options_load). Also resets every device's measurement (tests). */
void measure_init(void);
/* fork child: a measurement another thread was running is redone when needed. */
void measure_atfork_child(void);

/* The costs of `device`, measuring them on the first call (and the GEMM rate again while it
 * is unknown and cuBLAS has appeared). Returns 0 when all three rates are known, 1 when some
 * are unknown (their fields 0), -1 for a bad device. Thread-safe: a second thread waits for
 * a measurement in progress. Call with the device's context current or none (the primary
 * context is made current, as the runtime does). */
int measure_device(int device, struct measure_costs *out);

/* Device bytes the measurement still pending on `device` wants free under the ceiling (its
 * probes are reserved there like any allocation); 0 when nothing is left to measure. */
uint64_t measure_room_needed(int device);

/* Nanoseconds to spill `bytes` and bring them back: D2H + H2D at the measured rates.
 * MEASURE_UNKNOWN_NS when a rate is unknown. Measures on the first call. */
uint64_t measure_spill_ns(int device, uint64_t bytes);
/* Nanoseconds to recompute `flops` at the measured GEMM rate; MEASURE_UNKNOWN_NS when
 * unknown. Measures on the first call. */
uint64_t measure_recompute_ns(int device, uint64_t flops);

/* Pure helper (unit-tested); the time of an amount at a rate is costs_ns_at (costs_parse.h).
 * Rate of `amount` done in `ns` (0 when ns is 0). */
uint64_t measure_rate(uint64_t amount, uint64_t ns);

#endif /* MEMSHIM_MEASURE_H */
