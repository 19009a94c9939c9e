/* launch_memo: per thread, the kernel launches it made lately and the shape each was recorded
 * under (access_repeat.h), so that a launch like one before is recorded as a repeat of that
 * shape without looking any of its allocations up.
 *
 * A training step launches the same kernels with the same parameters step after step. Two
 * launches of one function on one stream whose parameters hold the same candidate words (those
 * a scan would look up, with the same read-only marks), made while the registry stayed the
 * same (registry_version), name the same allocations in the same order and modes, so they
 * record the same OP and ACCESS records but the time. A caching allocator rarely calls
 * cudaMalloc, so the registry rarely moves during a step; when it does, every entry made
 * before stops matching. The shape itself may have left the thread's table since:
 * access_repeat_shape then declines, and the launch is recorded in full and kept again.
 *
 * The table is the thread's own (no lock), four-way set-associative by a hash of the launch's
 * key: a step's few hundred launches would collide in a table indexed directly. A set's tags
 * share a line, apart from its entries. A launch comes back a step later, when the framework
 * has long pushed its entry out of the core's caches: that miss is most of what a repeat costs
 * here, as the shape table's was before. */
#ifndef MEMSHIM_LAUNCH_MEMO_H
#define MEMSHIM_LAUNCH_MEMO_H

#include <stdint.h>

#include "access_repeat.h"

/* Candidate words a launch keeps to be told apart by; one with more is never kept. Most
 * launches have a few, but a by-value struct's stale words add some to others (up to about
 * twenty on the example trainer where the allocations lie among the host's mappings). */
#define LAUNCH_CANDS 24

/* What tells two launches apart before any lookup. */
struct launch_key {
    uintptr_t fn; /* the function as launched (a CUfunction, or the runtime's handle) */
    uint64_t stream;
    uint64_t version; /* registry_version() when its candidates were taken */
    uint32_t reads;   /* bit i: cand[i] came from a read-only parameter */
    uint8_t api, ncand;
    const uint64_t *cand;
};

/* A launch's entry in this thread's table, or the one it would replace. */
struct launch_memo_place {
    void *entry; /* NULL: no table (more threads than tables, or out of memory) */
    uint32_t hash;
};

/* Where k is kept: 1 and its shape in *shape when this thread's table holds it, else 0 and
 * the entry to replace in *at (at->entry NULL without a table). */
int launch_memo_find(const struct launch_key *k, struct launch_memo_place *at,
                     struct access_shape *shape);
/* Keep k, recorded under `shape`, at the place launch_memo_find gave. */
void launch_memo_keep(const struct launch_memo_place *at, const struct launch_key *k,
                      const struct access_shape *shape);

/* The launch after this one is most often the one that came after it last time (a step makes
 * its launches in the same order every step), and by then the framework has pushed out of the
 * core's caches whatever that launch will read. So: note the launch kept at `at` (with the
 * caller's `hint` for it, e.g. its function's description, and its shape) as the successor of
 * the thread's previous one, and start fetching what its own successor used last time. A
 * wrong guess costs a few useless fetches. A launch that was not kept is best left out (the
 * chain then links the kept launches around it); an `at` without an entry starts it over. */
void launch_memo_follow(const struct launch_memo_place *at, const void *hint,
                        const struct access_shape *shape);
/* The hint given last time for the launch that followed the thread's previous one: likely,
 * never certainly, this launch's (NULL when there is none). */
const void *launch_memo_predicted(void);

#endif /* MEMSHIM_LAUNCH_MEMO_H */
