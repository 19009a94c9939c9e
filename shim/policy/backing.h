/* backing: device memory the shim maps itself with the driver's virtual-memory API, so that it
 * owns the address and can later move the contents behind it (residency.h). Two halves:
 *
 * - VMM primitives over the real driver table (real.h; never the hooks): reserve an address
 *   range, map device- or host-located physical memory into it, unmap, copy, synchronize. Every
 *   size is a multiple of backing_granularity(). Device memory is created pinned on the device;
 *   host-located memory (CU_MEM_LOCATION_TYPE_HOST) only where the device reports
 *   CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED.
 *
 * - The chunks of allocations below MEMSHIM_SPILL_MIN: each chunk (one mapped range, a
 *   power-of-two number of granules) is a buddy system (common/buddy.h) of power-of-two blocks
 *   from 256 bytes up to half the chunk. Every size shares every chunk, so a process with a
 *   handful of small buffers holds one chunk, not one per size. No CUDA, unit-tested alone.
 *   Fragmentation, stated: internal up to 2x per allocation (a request just above a power of
 *   two takes the next one; 256-byte floor); external, free blocks whose buddy is still in use,
 *   which cannot serve a larger request; a chunk goes back to the driver as soon as its last
 *   block is freed. Each allocated block carries a one-byte tag of the caller's (the shim: its
 *   category), so that a chunk moved off the device as a whole can take each block's bytes off
 *   the right category and put them back there. */
#ifndef MEMSHIM_BACKING_H
#define MEMSHIM_BACKING_H

#include <stddef.h>
#include <stdint.h>

#include "buddy.h"

/* ---- VMM primitives. 0 on success, the CUresult otherwise. ---- */

/* Learn the device's granularity and host-VMM support, and make sure the calling thread has a
 * context (the primary one, retained, as the runtime would), so copies can run. Idempotent. */
int backing_device_init(int device);
uint64_t backing_granularity(int device); /* 0 before backing_device_init succeeded */
int backing_host_vmm(int device);         /* 1 when host-located VMM memory is available */
/* Ensure the calling thread has a current context for `device` (copies need one). */
int backing_ensure_context(int device);

int backing_reserve(uint64_t size, uint64_t *va);
void backing_unreserve(uint64_t va, uint64_t size);
/* Create physical memory (on the device, or on the host when host != 0), map it at va and
 * grant the device read/write access. *handle receives the allocation handle. */
int backing_map(int device, int host, uint64_t va, uint64_t size, uint64_t *handle);
/* Map an existing handle at va (device read/write). */
int backing_map_handle(int device, uint64_t va, uint64_t size, uint64_t handle);
/* Unmap [va, va+size) and release `handle` (0: keep it). */
void backing_unmap(uint64_t va, uint64_t size, uint64_t handle);
int backing_copy_dtod(uint64_t dst, uint64_t src, uint64_t size);
int backing_copy_dtoh(void *dst, uint64_t src, uint64_t size);
int backing_copy_htod(uint64_t dst, const void *src, uint64_t size);
/* Wait for all work queued in the current context (every stream). */
int backing_sync(void);

/* ---- the sub-allocator: a buddy system per chunk ---- */

#define BACKING_MAX_BLOCKS BUDDY_MAX_BLOCKS /* smallest blocks per chunk */

/* One chunk (its size a power of two): blocks of every size from `unit` up to the whole chunk,
 * split and merged with their buddies, so all sizes share a chunk. */
struct backing_chunk {
    uint64_t base;  /* device address of the mapped chunk */
    uint64_t bytes; /* chunk size */
    uint64_t unit;  /* smallest block */
    uint64_t handle;
    uint64_t used; /* bytes in allocated blocks */
    struct buddy buddy;
    uint64_t bits[BUDDY_MAX_WORDS];       /* the buddy's free blocks */
    uint8_t order_of[BACKING_MAX_BLOCKS]; /* allocated block at unit i: its order + 1 */
    uint8_t tag_of[BACKING_MAX_BLOCKS];   /* allocated block at unit i: its tag */
};

void backing_chunk_init(struct backing_chunk *c, uint64_t base, uint64_t bytes);
/* Address of a free block of `size` bytes (a power of two >= unit), now used; 0 when none. */
uint64_t backing_chunk_take(struct backing_chunk *c, uint64_t size);
/* Free the block at addr: its size, or 0 when addr is not an allocated block of this chunk. */
uint64_t backing_chunk_give(struct backing_chunk *c, uint64_t addr);
/* The tag of the allocated block at addr (0 when taken, until set); -1 when addr is not one. */
int backing_chunk_tag(const struct backing_chunk *c, uint64_t addr);
/* Set it; ignored when addr is not an allocated block. */
void backing_chunk_set_tag(struct backing_chunk *c, uint64_t addr, uint8_t tag);
/* The first allocated block at or after addr, in address order: its address, with its size in
 * *size; 0 when there is none. Walk a chunk with a = c->base, then a = next + size. */
uint64_t backing_chunk_next(const struct backing_chunk *c, uint64_t addr, uint64_t *size);

#endif /* MEMSHIM_BACKING_H */
