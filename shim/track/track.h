/* track: the one door from the interception layer (intercept_*.c) into the core modules
 * (options, registry, callsite, classify, budget, trace). Hooks translate a CUDA call into
 * these calls and nothing else; all policy lives behind them. API-agnostic: nothing here
 * knows whether a call came from the runtime, the driver or a lookup. */
#ifndef MEMSHIM_TRACK_H
#define MEMSHIM_TRACK_H

#include <stddef.h>
#include <stdint.h>

#include "guard.h"
#include "memshim/trace_format.h"
#include "registry.h"

/* Filled by track_alloc_begin, handed back to track_alloc_end. Lives on the hook's stack. Its
 * fields are those of the registry entry the allocation becomes, in the entry's own layout, so
 * the entry is built where the ticket is, not copied out of it. */
struct track_ticket {
    union {
        struct registry_entry entry;
        struct {
            uint64_t addr;      /* set by track_alloc_end */
            uint64_t bytes;     /* charged against the ceiling */
            uint64_t requested; /* what the program asked for */
            uint64_t handle;    /* 0: the registry's mapping field, unused here */
            uint32_t site;      /* call site (0 when stacks are off) */
            uint8_t kind;       /* enum mst_alloc_kind */
            uint8_t category;   /* enum mst_category */
            uint8_t device;
            uint8_t flags; /* MST_ALLOC_F_* */
        };
    };
    uint8_t served;   /* the shim serves it itself (MEMSHIM_POLICY=spill, residency.h) */
    uint8_t reserved; /* its bytes were reserved: the call is tracked */
};
#define TRACK_TICKET_AS_ENTRY(f, ef)                                                               \
    _Static_assert(offsetof(struct track_ticket, f) == offsetof(struct track_ticket, entry) +      \
                                                           offsetof(struct registry_entry, ef) &&  \
                       sizeof(((struct track_ticket *)0)->f) ==                                    \
                           sizeof(((struct registry_entry *)0)->ef),                               \
                   "ticket field " #f " is the entry's " #ef)
TRACK_TICKET_AS_ENTRY(addr, addr);
TRACK_TICKET_AS_ENTRY(bytes, size);
TRACK_TICKET_AS_ENTRY(requested, requested);
TRACK_TICKET_AS_ENTRY(handle, handle);
TRACK_TICKET_AS_ENTRY(site, site);
TRACK_TICKET_AS_ENTRY(kind, kind);
TRACK_TICKET_AS_ENTRY(category, category);
TRACK_TICKET_AS_ENTRY(device, device);
TRACK_TICKET_AS_ENTRY(flags, flags);
#undef TRACK_TICKET_AS_ENTRY

/* Once, from the library constructor: read options, set up the trace writer lazily. */
void track_init(void);

/* Re-reads what track_init settled from the modules below it (the stack depth, the residency
 * policy), for a program that re-initialises one of them afterwards, as bench_alloc switches the
 * stack depth between its loops. The shim itself never needs it. */
void track_settle_paths(void);

/* Describe a device the first time it is used (name, physical memory, compute capability);
 * resolves percentage ceilings and writes the DEVICE record. Idempotent per ordinal. */
void track_device_info(int ordinal, const char *name, uint64_t total_bytes, int cc_major,
                       int cc_minor);
/* Whether track_device_info has run for this ordinal (cheap, for the hooks' fast path). */
int track_device_known(int ordinal);

/* Before the real allocation: capture the call site, classify, and reserve `bytes` against
 * the device's ceiling. Returns 0 to go ahead with the real call; -1 when the allocation
 * would cross the ceiling, in which case the OOM is already recorded and reported and the
 * hook must return the API's own out-of-memory code without calling the real function. */
int track_alloc_begin(struct track_ticket *t, int device, enum mst_alloc_kind kind, uint64_t bytes,
                      uint64_t requested);

/* After the real allocation. ok != 0: record the allocation at addr (a handle for
 * MST_KIND_CU_MEM_CREATE). ok == 0: release the reservation; oom != 0 records that the real
 * stack ran out of memory. */
void track_alloc_end(struct track_ticket *t, int ok, int oom, uint64_t addr, uint64_t stream);

/* Under MEMSHIM_POLICY=spill the shim serves some allocations itself instead of the real
 * function (residency.h), between track_alloc_begin and in place of the real call + end:
 * 0: not served, call the real function and track_alloc_end as usual; 1: served, *addr is the
 * allocation (recorded); -1: no room (recorded as out of memory): return the API's OOM code. */
int track_alloc_serve(struct track_ticket *t, uint64_t *addr, uint64_t stream);

/* Before the real free (so the address cannot be reused in between). Returns 1 when addr
 * was a tracked allocation (now removed, its bytes released), 0 for an unknown pointer,
 * TRACK_FREED_SERVED when the shim served it and has freed it: the real free must not run. */
#define TRACK_FREED_SERVED 2
int track_free(uint64_t addr, enum mst_alloc_kind kind, uint64_t stream);

/* Virtual-memory mappings of cuMemCreate handles (the bytes are charged at cuMemCreate; a
 * handle released while mapped is freed at its last unmap, as the driver frees it). */
void track_map(int device, uint64_t addr, uint64_t size, uint64_t handle);
void track_unmap(int device, uint64_t addr, uint64_t size);

/* Adjust what the real cudaMemGetInfo/cuMemGetInfo returned to the ceiling:
 * total = min(ceiling, physical), free = min(real free, ceiling - resident). */
void track_mem_info(int device, size_t *free_bytes, size_t *total_bytes);

/* Phases (NVTX ranges and the app API), steps and explicit category tags, per thread. */
void track_phase_push(const char *name);
void track_phase_pop(void);
void track_step(uint64_t n);
int track_tag_push(const char *category); /* -1 for an unknown category name */
void track_tag_pop(void);

/* The allocation holding `addr` turned out to be used as `category` (a cuBLAS workspace):
 * move it there, in the registry, the budget's per-category bytes and the trace (RETAG).
 * A category the program set explicitly (app API, NVTX) is kept. 1 when retagged. */
int track_retag(uint64_t addr, enum mst_category category);

/* What the residency policy (MEMSHIM_POLICY=spill, recompute, auto; residency.h) needs to hear
 * from the hooks, passed through unchanged. */
struct lineage_call;
int track_remat(void);                    /* recompute is on: GEMM lineages are kept */
void track_stream_alloc(uint64_t stream); /* before a stream-ordered allocation */
void track_gemm_written(const struct lineage_call *call, const uint64_t *in, unsigned nin,
                        uint64_t flops, uint64_t ws, uint64_t ws_bytes);
void track_blas_handle(uint64_t handle);            /* destroyed, or its workspace changes */
int track_forget_lineages(void);                    /* before a kernel the shim cannot see into */
void track_expose(const uint64_t *addrs, size_t n); /* addresses seen in a pointer array */
void track_scan_host(const void *src, uint64_t bytes); /* host source of a host-to-device copy */
/* Whether addr lies in a range the shim serves itself: 1 with its base, size and device. */
int track_owned_range(uint64_t addr, uint64_t *base, uint64_t *size, int *device);

/* cuMemRelease of a cuMemCreate handle: freed now, or at its last unmap when it is still
 * mapped (the driver keeps the memory alive until then). */
void track_release_handle(uint64_t handle);

/* Tensors a framework's caching allocator hands out from its segments (torch_alloc.c).
 * track_tensor_begin before the framework's allocate call: captures the call site and
 * classifies, and the allocations this thread makes until track_tensor_end are that
 * allocator's segments (MST_ALLOC_F_POOL). track_tensor_end logs the tensor (addr 0: none).
 * track_tensor_free logs its return, before the framework takes it back. Tensors are not
 * charged: their segments are. */
struct track_tensor {
    uint32_t site;
    uint8_t category;
    uint8_t flags;
    uint8_t outer;    /* this thread was already inside a framework allocate */
    int8_t autograd;  /* the node's kind (enum mst_autograd_kind); -1: none */
    uint64_t seq;     /* the node's number */
    uint64_t forward; /* the thread that made the node */
};
void track_tensor_begin(struct track_tensor *t);
void track_tensor_end(const struct track_tensor *t, uint64_t addr, uint64_t size,
                      uint64_t requested, int device);
void track_tensor_free(uint64_t addr);

/* The autograd node of the tensor track_tensor_end logs: an MST_REC_AUTOGRAD record right after
 * its TENSOR_ALLOC (kind: enum mst_autograd_kind). */
static inline void track_tensor_autograd(struct track_tensor *t, int kind, uint64_t seq,
                                         uint64_t fwd_thread)
{
    t->autograd = (int8_t)kind;
    t->seq = seq;
    t->forward = fwd_thread;
}

/* Flush buffered trace records now (memshim_flush, fatal signals, exit). */
void track_flush(void);

/* Per-thread recursion guard (guard.h): hooks call the real function directly while it is held.
 * guard_enter returns 0 if the guard was already held; leave only after an enter that returned
 * 1. Leaving also lets go of the bytes of the frees made under the guard: only after the real
 * free has returned may another thread's allocation take them. */
static inline int track_guard_enter(void)
{
    return guard_enter();
}
void track_guard_leave(void);

#endif /* MEMSHIM_TRACK_H */
