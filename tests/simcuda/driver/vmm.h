/* vmm: the virtual-memory API — reservations, physical handles, maps and access. */
#ifndef SIMCU_VMM_H
#define SIMCU_VMM_H

#include <cuda.h>

#include <stdbool.h>

struct vmm_handle;

/* Where a handle's memory lives, for pointer-attribute queries (mapping lock held). */
bool vmm_handle_is_host(const struct vmm_handle *h);
CUmemAllocationHandleType vmm_handle_types(const struct vmm_handle *h);

#endif
