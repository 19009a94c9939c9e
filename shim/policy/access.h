/* access: which tracked allocations each GEMM, copy, set and kernel launch touches.
 *
 * Hooks (intercept_*.c) describe an operation and the byte ranges it touches; access resolves
 * each range to the tracked allocation holding it (the registry's containment index), writes
 * one OP record followed by its ACCESS records, and tells the residency layer (spill,
 * recompute) which allocations the call is about to use and how (read, write, maybe), so they
 * are on the device before the real call runs and what was computed from those it may write is
 * recomputed first. API-agnostic like track.h: nothing here knows which library a call came
 * from. */
#ifndef MEMSHIM_ACCESS_H
#define MEMSHIM_ACCESS_H

#include <stddef.h>
#include <stdint.h>

#include "access_memo.h"
#include "access_repeat.h"
#include "memshim/trace_format.h"
#include "registry.h"

/* MEMSHIM_ACCESS: off records nothing, gemm records cuBLAS/cuBLASLt calls only, all adds
 * copies, sets and kernel launches. Read once at load. */
enum access_level { ACCESS_OFF = 0, ACCESS_GEMM = 1, ACCESS_ALL = 2 };
enum access_level access_level(void);
/* Whether a record made now would be read: the trace takes it, or the spill policy restores
 * what the call will touch. With neither, access_record and its kin return at once, and the
 * hooks of launches, copies and GEMMs pass straight through. */
int access_recording(void);
/* Read MEMSHIM_ACCESS (track_init, after the options are loaded; until then the level is off).
 * access_atfork_child forgets the kernel and entry-point names interned for the parent's
 * trace. */
void access_init(void);
void access_atfork_child(void);

/* One operation, as the hook saw it. */
struct access_op {
    uint8_t kind;                      /* enum mst_op_kind */
    uint8_t dtype_a, dtype_b, dtype_c; /* cudaDataType values, 0xff when not applicable */
    uint64_t stream;
    uint64_t m, n, k, batch;
    uint64_t flops;
    const char *name; /* entry point or kernel symbol; must outlive the process (a literal,
                         or a name interned by the caller) */
};

/* One byte range the operation touches. */
struct access_range {
    uint64_t addr;
    uint64_t size;
    uint8_t mode; /* MST_ACCESS_READ | MST_ACCESS_WRITE, or MST_ACCESS_MAYBE */
};

/* Record `op` and its `n` ranges (ranges in untracked memory are recorded with alloc_addr 0)
 * and make every tracked allocation among them resident. Returns 0 to go ahead with the real
 * call, -1 when an allocation it needs could not be brought back to the device (the hook then
 * returns the API's out-of-memory code). Recursion-guarded callers only. */
int access_record(const struct access_op *op, const struct access_range *ranges, size_t n);

/* Calls a hook can name by words of its own before it works out their ranges (a GEMM by its
 * arguments, its handle's stream and workspace, whether beta is zero): access_repeat_call
 * writes the call as a repeat of the one this thread recorded under the same words while the
 * registry stood as now, and returns 1: nothing more to do (it only does so when no residency
 * policy needs the allocations). Else 0, and the hook describes the call to access_record_call
 * with the same *key, which keeps the shape it is recorded under by those words. The words must
 * determine the OP and ACCESS records but their time. Recursion-guarded callers only. */
int access_repeat_call(struct access_memo_key *key, const uint64_t *w, size_t n);
int access_record_call(const struct access_memo_key *key, const struct access_op *op,
                       const struct access_range *ranges, size_t n);

/* The real call an access_record (or access_record_allocations*) prepared for has returned:
 * its work is queued, and every later move synchronizes the context before it touches memory,
 * so the allocations it used need not stay pinned. Without this a thread that waits elsewhere
 * (PyTorch's main thread inside backward, while the autograd thread runs) would hold its
 * latest operation's ranges on the device for as long as it waits. */
void access_done(void);

/* A tracked allocation (REGISTRY_ADDR) or mapping (REGISTRY_MAP) a call touches. */
struct access_use {
    enum registry_ns ns;
    struct registry_entry e;
};

/* As access_record, for a hook that found the allocations itself (kernel launches scan their
 * parameters with registry_containing): each of the `n` distinct allocations is recorded as
 * touched whole, with `mode`, and made resident. Saves looking every one up a second time. */
int access_record_allocations(const struct access_op *op, const struct access_use *use, size_t n,
                              uint8_t mode);
/* The same with a mode per allocation (modes[i] for use[i]): a launch whose kernel has
 * parameters declared read-only (`readonly` rules) reads some of its allocations only. *shape
 * (may be NULL; slot 0 when none) names how the operation is held in this thread's table of
 * repeated shapes (access_repeat.h), valid on this thread only, for access_repeat_shape. */
int access_record_allocations_shape(const struct access_op *op, const struct access_use *use,
                                    const uint8_t *modes, size_t n, struct access_shape *shape);

/* Repeated operations without their lookups. A hook that can tell, before it looks anything
 * up, that a call is one it recorded before (a launch of the same kernel on the same stream
 * with the same parameter words, the registry unchanged since) keeps the shape that call was
 * recorded under, and records the next one as a repeat of it: no lookup, no record assembled.
 * 1 when done, 0 when the caller must record it in full (the table replaced that shape, the
 * trace is a new one, or the spill policy needs the allocations). */
int access_repeat_shape(const struct access_shape *shape);

#endif /* MEMSHIM_ACCESS_H */
