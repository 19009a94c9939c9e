/* budget: bytes resident per device against its ceiling, exact across threads. A caller
 * reserves before the real allocation (an atomic compare-and-swap that fails past the
 * ceiling), then either commits the bytes to a category (success) or releases them (failure);
 * a free releases what was committed. Slot BUDGET_HOST counts host-located memory. */
#ifndef MEMSHIM_BUDGET_H
#define MEMSHIM_BUDGET_H

#include <stddef.h>
#include <stdint.h>

#include "compat.h"
#include "memshim/trace_format.h"

#define BUDGET_HOST  MS_MAX_DEVICES
#define BUDGET_SLOTS (MS_MAX_DEVICES + 1)

struct budget_snapshot {
    uint64_t ceiling; /* 0 = none */
    uint64_t resident;
    uint64_t peak;
    uint64_t physical; /* 0 until the device is described */
    uint64_t by_category[MST_CATEGORY_MAX];
};

void budget_reset(void);
/* Forget usage and peaks, keep ceilings (fork child). */
void budget_clear_usage(void);
/* 0 removes the ceiling. Slots outside [0, BUDGET_SLOTS) are ignored everywhere. */
void budget_set_ceiling(int slot, uint64_t ceiling);
void budget_set_physical(int slot, uint64_t physical);
uint64_t budget_ceiling(int slot);

/* 0 when `bytes` fit under the ceiling (now reserved), -1 when they do not. */
int budget_reserve(int slot, uint64_t bytes);
/* Give back a reservation that did not become an allocation. */
void budget_release(int slot, uint64_t bytes);
/* A reservation became an allocation of `category`. */
void budget_commit(int slot, uint8_t category, uint64_t bytes);
/* A committed allocation was freed. */
void budget_free(int slot, uint8_t category, uint64_t bytes);

/* Committed bytes leave their category but stay reserved (spill: a freed slot of a chunk the
 * shim keeps mapped). */
void budget_uncommit(int slot, uint8_t category, uint64_t bytes);

void budget_snapshot(int slot, struct budget_snapshot *out);
/* What cudaMemGetInfo should say under the ceiling: total = min(ceiling, physical),
 * free = min(real free, ceiling - resident). NULL pointers are left alone. */
void budget_mem_info(int slot, size_t *free_bytes, size_t *total_bytes);

#endif /* MEMSHIM_BUDGET_H */
