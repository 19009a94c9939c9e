/* mempool: stream-ordered allocation and memory pools. Pools cache nothing: an allocation
 * maps fresh memory and a free unmaps it at once, so a use after cuMemFreeAsync faults. */
#ifndef SIMCU_MEMPOOL_H
#define SIMCU_MEMPOOL_H

#include <cuda.h>

#include <stdint.h>

/* Takes back the bytes of a freed pool allocation (cuMemFree of pool memory). */
void mempool_note_free(CUmemoryPool pool, uint64_t bytes);

#endif
