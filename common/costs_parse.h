/* costs_parse: the syntax of MEMSHIM_COSTS (the shim) and of `whatif --costs` (the analyzer),
 * one parser (and one cost formula) for both so that a forced cost model means the same thing in a
 * run and in its replay. Pure: no CUDA, no allocation, no locale.
 *
 *     h2d=12g,d2h=12g,gemm=50t
 *
 * Comma-separated `key=rate`, keys h2d and d2h (host-link bytes per second, host to device and
 * back) and gemm (FLOP per second), each at most once, in any order. A rate is a number with
 * an optional fraction and an optional k/m/g/t suffix, decimal (1e3, 1e6, 1e9, 1e12: rates are
 * quoted in GB/s and TFLOP/s), greater than 0. A key left out is 0: "measure it". The empty
 * string sets nothing. */
#ifndef MEMSHIM_COSTS_PARSE_H
#define MEMSHIM_COSTS_PARSE_H

#include <stdint.h>

struct costs_rates {
    uint64_t h2d_bytes_per_s; /* 0: not given */
    uint64_t d2h_bytes_per_s;
    uint64_t gemm_flops_per_s;
};

/* The accepted forms, for error messages. */
#define COSTS_FORMS                                                                                \
    "comma-separated h2d=RATE, d2h=RATE (bytes/s) and gemm=RATE (FLOP/s), RATE a number with an "  \
    "optional k/m/g/t suffix (base 1000), e.g. h2d=12g,d2h=12g,gemm=50t"

/* 0 and *out filled (keys not given: 0); -1 on a malformed string (*out unchanged). */
int costs_parse(const char *s, struct costs_rates *out);

/* One rate ("12g", "1.5t", "800000"): 0 and *out (> 0) filled; -1 when malformed, zero or
 * beyond 2^64 - 1. `len` bytes of s are read (no terminator needed). */
int costs_parse_rate(const char *s, unsigned long len, uint64_t *out);

/* The cost model's one formula, shared by the shim (measure.c) and the analyzer's replay:
 * nanoseconds to do `amount` (bytes, FLOPs) at `per_s`, rounded up; COSTS_UNKNOWN_NS when
 * per_s is 0 (unknown: never the cheaper choice), else saturating just below it. */
#define COSTS_UNKNOWN_NS UINT64_MAX
uint64_t costs_ns_at(uint64_t amount, uint64_t per_s);
/* Spilling `bytes` and having them back: out at d2h, in at h2d. COSTS_UNKNOWN_NS when either
 * rate is 0, else saturating just below it. */
uint64_t costs_spill_ns(uint64_t bytes, uint64_t d2h_per_s, uint64_t h2d_per_s);

#endif /* MEMSHIM_COSTS_PARSE_H */
