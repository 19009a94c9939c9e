/* residency: under MEMSHIM_POLICY=spill (and recompute, auto), the shim serves cudaMalloc /
 * cuMemAlloc from ranges it maps itself (backing.h) and moves their contents between device and
 * host behind unchanged addresses, so a job whose peak is above MEMSHIM_LIMIT keeps running.
 *
 * - Served: cudaMalloc, cuMemAlloc(_v2), cudaMallocAsync and cuMemAllocAsync (not on a stream
 *   being captured) on a device with virtual-memory management. At or
 *   above MEMSHIM_SPILL_MIN an allocation gets its own range (granule-rounded, charged at that
 *   size); below, a slot of a size class in a shared chunk (charged at the class size; a chunk's
 *   free slots stay charged to the device as an uncommitted reservation, so the budget always
 *   equals the device memory actually mapped). Every other allocation path is passed through
 *   and charged as before.
 * - Chunks move whole: a chunk is one victim candidate (its size; the latest access to any of
 *   its blocks; in use while any block is), spilled whole, or under recompute and auto with
 *   the GEMM outputs among its blocks dropped instead of copied (residency_blocks.c). Its blocks'
 * bytes leave their categories and the free blocks' reservation leaves the device budget; the
 *   chunk's size goes to the host budget; a restore puts back exactly that. A new small
 *   allocation never lands in a chunk that is away; a block freed there leaves the chunk's host
 *   bytes charged until the chunk's last block goes, which releases them.
 * - Spill: when an allocation (or a restore) would cross the ceiling, victims are chosen by
 *   victim.h (once a whole step has been seen, by the farthest next use forecast from the
 *   previous step: nextuse.h; before that, least recently used) among the resident ranges (own and
 * chunks) on that device that no current operation uses, and each is copied to host memory, charged
 * to the host budget (MEMSHIM_HOST_LIMIT). Where the device supports host-located VMM memory, host
 * physical memory is mapped into the same range (an access the shim does not see still works, at
 * link speed); elsewhere the range is unmapped and restored before every access the shim sees.
 * - Restore: residency_prepare, called by access.c before each copy, set, GEMM and launch with
 *   the allocations it touches, maps device memory back and copies the contents home. Only on
 *   use, never ahead of it: a move synchronizes the context on the calling thread, so an early
 *   restore would hide no time, and on PyTorch every one made was spilled again before its use
 *   (at 30% of the GPT's peak, 40 MB brought back early, 40 MB more spilled, no restore saved).
 * - Ordering: every move first synchronizes the context (cuCtxSynchronize), so work already
 *   queued on any stream that may use the range has finished. Costly, and simple; stated in
 *   the README.
 * - Pins: the allocations of a thread's latest operation are never chosen as victims until its
 *   real call has returned (residency_call_done; its work is then queued, and a move
 *   synchronizes first) or that thread's next operation (or allocation) begins. A pinned range
 *   that a call uses in host memory is not brought home meanwhile either (by another thread's
 *   operation): the swap would lose what that call writes after the copy.
 * - Recompute (MEMSHIM_POLICY=recompute or auto): an own range whose contents a recorded GEMM
 *   produced (lineage.h) may be dropped instead of spilled — unmapped, nothing kept — and is
 *   recomputed by replaying that GEMM before the next access the shim sees. Before an operation
 *   that may write an input of a dropped range (or a free of one) runs, the range is recomputed
 *   from the old input, then its lineage is forgotten. A range whose address was seen where the
 *   shim cannot follow it (a pointer array, a host-to-device copy's source) is "exposed" and
 *   only ever spilled. Chains of dropped ranges stay within LINEAGE_MAX_DEPTH.
 * - Every move is an MST_REC_RESIDENCY record (bytes, duration) and counted in the summary.
 * - Locking: one mutex for all of it (allocation, free, prepare, moves); moves are rare next to
 *   the operations, and prepare without a move is a bisection and a few stores. */
#ifndef MEMSHIM_RESIDENCY_H
#define MEMSHIM_RESIDENCY_H

#include <stddef.h>
#include <stdint.h>

#include "lineage.h"
#include "memshim/trace_format.h"

/* From track_init, after options_load. */
void residency_init(void);
/* 1 under MEMSHIM_POLICY=spill, recompute or auto (the shim maps device memory itself). */
int residency_enabled(void);
/* 1 under recompute or auto: GEMM lineages are kept and their outputs may be dropped. */
int residency_remat(void);

/* The bytes to charge for an allocation of `requested` bytes of `kind` on `device` if the shim
 * serves it, 0 if it does not (then the real function is called). */
uint64_t residency_charge(int kind, int device, uint64_t requested);
/* A stream-ordered allocation hook calls this before tracking the allocation: when `stream`
 * is being captured into a graph, that allocation is left to the driver (residency_charge
 * answers 0 once), since its memory must live as long as the graph, not as the call. */
void residency_stream_alloc(uint64_t stream);

/* Serve it: map (or sub-allocate) `charged` bytes (from residency_charge), already reserved in
 * the device budget. 0 and *addr on success, -1 when there is no room (nothing kept). */
int residency_serve(int device, uint64_t requested, uint64_t charged, uint8_t category,
                    uint64_t *addr);
/* A tracked allocation is being freed (already out of the registry). 1 when the shim served
 * it: its memory is gone and its budget settled here (the real free must not be called); 0 for
 * an allocation of the real driver. */
/* The allocation residency_serve returned at addr is recorded: its range may move again. */
void residency_served(uint64_t addr);
int residency_free(uint64_t addr, uint8_t category, uint64_t charged);

/* Reserve `need` bytes in the budget of `device`, spilling until they fit. 0 when reserved,
 * -1 when they cannot fit (nothing reserved). */
int residency_reserve(int device, uint64_t need);

/* The allocations (base addresses, as in the registry) an operation is about to use, each with
 * the OR of its access modes (MST_ACCESS_*): make them resident, spilling others if needed; for
 * those it may write (WRITE or MAYBE), recompute what was computed from them and forget those
 * lineages and their own. 0 to go ahead, -1 when one could not be restored or recomputed. */
int residency_prepare(const uint64_t *bases, const uint8_t *modes, size_t n);

/* The calling thread's latest operation has been issued: its ranges are no longer pinned. */
void residency_call_done(void);

/* A GEMM completed `call` (beta = 0, host scalars), writing all of the allocation at call->c
 * from the allocations at in[0..nin): remember it as that range's lineage when the range is one
 * the shim owns. ws/ws_bytes: the handle's workspace, made resident for a replay. */
void residency_gemm_written(const struct lineage_call *call, const uint64_t *in, unsigned nin,
                            uint64_t flops, uint64_t ws, uint64_t ws_bytes);
/* A cuBLAS handle is destroyed or its workspace changes: recompute what it would replay, then
 * forget those lineages. */
void residency_blas_handle(uint64_t handle);
/* An operation whose writes the shim cannot know is about to run (a kernel launch whose
 * parameter layout is unknown): every dropped range is recomputed now, from inputs that are
 * still intact, and every lineage is forgotten, since any input may change. 0 to go ahead, -1
 * when a recompute failed (its lineage is kept; the operation must not run). */
int residency_forget_lineages(void);
/* Device addresses seen in a pointer array: their ranges are never dropped from now on. */
void residency_expose(const uint64_t *addrs, size_t n);
/* The host source of a host-to-device copy: aligned words pointing into an own range expose it
 * (the first RES_SCAN_MAX bytes; that is how pointer arrays reach the device). */
void residency_scan_host(const void *src, uint64_t bytes);

/* Whether addr lies in a range the shim owns (an allocation's own range, or a chunk of small
 * allocations: then the chunk's range). 1 with its base, size and device, else 0. Takes the
 * residency lock. */
int residency_lookup(uint64_t addr, uint64_t *base, uint64_t *size, int *device);

/* Spill/restore counters for the exit summary (the shim makes no prefetch: `prefetches` stays
 * 0). */
void residency_summary(struct mst_rec_summary *s);
/* Calls refused (out of memory) because what they use could not be brought back. */
uint64_t residency_access_ooms(void);
/* Spilled ranges used in host memory by an operation the device had no room for (MEMSHIM_HOST_USE):
 * how many uses, and their bytes in *bytes. */
uint64_t residency_host_uses(uint64_t *bytes);

/* A training step begins (memshim_step_begin, an NVTX step range): the step just ended becomes
 * the forecast of the next uses. */
void residency_step(void);

/* fork: the lock is held across it; the child starts with no ranges. */
void residency_atfork_prepare(void);
void residency_atfork_parent(void);
void residency_atfork_child(void);

#endif /* MEMSHIM_RESIDENCY_H */
