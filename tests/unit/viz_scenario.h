/* A small trace whose numbers are easy to work out by hand, for the viz tests (timeline,
 * exports, diff) and the e2e checks. Sizes in MiB, times in ns, one device, one thread:
 *
 *   t=1000   ceiling 64 MiB, policy spill            (with_ceiling)
 *   t=2000   alloc P1 16 MiB parameter   site init_params
 *   t=3000   alloc P2 16 MiB parameter   site init_params
 *   t=10000  step 0; phase forward (11000..17000)
 *   t=12000  alloc A1 `activation_mib` activation   site forward, phase forward
 *   t=13000  alloc A2 `activation_mib` activation   site forward, phase forward
 *   t=14000  spill A1, t=15000 restore A1            (with_spill)
 *   t=16000  OOM: request 128 MiB                     (with_oom)
 *   t=18000  phase backward: free A2 (19000), free A1 (20000)
 *   t=22000  phase optimizer: alloc O1 8 MiB optimizer_state site adam (23000)
 *   t=30000  step 1: alloc T 4 MiB unknown site scratch (31000), free T (32000)
 *
 * With activation_mib = 8 the peak is 48 MiB at t=13000 (parameter 32, activation 16). */
#ifndef VIZ_SCENARIO_H
#define VIZ_SCENARIO_H

#include <stdint.h>

#define VIZ_MIB (1ull << 20)

struct viz_scenario {
    int with_ceiling;
    int with_spill;
    int with_oom;
    uint64_t activation_mib;
};

/* Writes the trace to `path`; returns the number of event records (all but definitions),
 * or -1 when the file cannot be written. */
int viz_scenario_write(const char *path, const struct viz_scenario *s);

#endif /* VIZ_SCENARIO_H */
