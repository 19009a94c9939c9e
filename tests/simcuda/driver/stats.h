/* stats: the byte and call counters behind capacity checks and SIMCUDA_STATS.
 * Every allocation path charges its bytes here, so the capacity and the referee's numbers
 * cannot drift apart. Lock-free: counters are atomics. */
#ifndef SIMCU_STATS_H
#define SIMCU_STATS_H

#include <stdbool.h>
#include <stdint.h>

enum stats_place {
    STATS_DEVICE = 0, /* counts against SIMCUDA_DEVICE_MEMORY */
    STATS_HOST = 1,   /* host-located VMM memory: counted, never limited */
};

enum stats_copy {
    STATS_COPY_H2D,
    STATS_COPY_D2H,
    STATS_COPY_D2D,
    STATS_COPY_H2H,
};

/* Device capacity in bytes (SIMCUDA_DEVICE_MEMORY, default 16g). */
uint64_t stats_capacity(void);
uint64_t stats_used(enum stats_place place);

/* Counts one allocation of bytes; false (and a failed allocation) beyond capacity. */
bool stats_charge(enum stats_place place, uint64_t bytes);
/* Takes back a charge whose allocation failed later on, and counts the failure. */
void stats_refund(enum stats_place place, uint64_t bytes);
/* Counts one free of bytes charged earlier. */
void stats_uncharge(enum stats_place place, uint64_t bytes);

void stats_count_copy(enum stats_copy kind, uint64_t bytes);
void stats_count_kernel(void);

/* Marks the calling process as the one whose exit writes SIMCUDA_STATS (called by cuInit):
 * a child forked after initialisation inherits the counters but must not overwrite the
 * parent's file. */
void stats_claim_process(void);

/* Writes the JSON object to path now; false on I/O error. */
bool stats_write(const char *path);

#endif
