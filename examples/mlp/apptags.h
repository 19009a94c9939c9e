/* The trainer's use of memshim's optional app API (include/memshim/memshim.h): category tags
 * around allocations and a mark at each step. Without the shim, or with --no-tags, every call
 * here does nothing, and the shim must fall back on NVTX ranges and lifetime inference.
 */
#ifndef MLP_APPTAGS_H
#define MLP_APPTAGS_H

#include <stdbool.h>
#include <stdint.h>

void apptags_enable(bool on);
void apptags_push(const char *category);
void apptags_pop(void);
void apptags_step_begin(uint64_t step);

#endif /* MLP_APPTAGS_H */
