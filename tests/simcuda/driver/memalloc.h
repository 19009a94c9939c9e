/* memalloc: linear device allocations (cuMemAlloc and friends), shared with the pools. */
#ifndef SIMCU_MEMALLOC_H
#define SIMCU_MEMALLOC_H

#include "mapping.h"

#include <cuda.h>

/* Device allocations are charged in units of this many bytes (and aligned to a page). */
#define MEMALLOC_UNIT 256ull

/* Maps fresh read-write memory for size bytes and charges charge bytes of device memory. */
CUresult memalloc_alloc(uint64_t size, uint64_t charge, enum mapping_kind kind, CUmemoryPool pool,
                        CUdeviceptr *out);

/* Frees an allocation made by memalloc_alloc, giving its bytes back to its pool if any. */
CUresult memalloc_free(CUdeviceptr ptr);

#endif
