/* registry: the live allocations, keyed by (namespace, address). Device addresses, cuMemCreate
 * handles and virtual-memory mappings live in separate namespaces because their values can
 * coincide. Nodes, chunks and arrays come from the shim's arena (mmap), never the
 * application's heap.
 *
 * REGISTRY_ADDR (device allocations) and REGISTRY_MAP (cuMemMap ranges, e.g. PyTorch's
 * expandable segments) live in one ordered index per namespace, which answers both exact calls
 * and containment ("which allocation holds this address") with a single structure, so an
 * allocation or free updates one place: the live entries in address order, in chunks of up to
 * 64 under a top-level array of the chunks' first addresses (a two-level B-tree). Writers take
 * the namespace's sequence counter from even to odd (it is both their lock and the readers'
 * seqlock: one locked instruction per update); an update moves at most one chunk's entries
 * (splitting a full chunk, dropping an empty one shifts the top array, n/64 slots at most),
 * and the last chunk stays when it empties, so a temporary allocated and freed maps nothing.
 * Lookups (registry_lookup, registry_containing) bisect both levels, O(log n), with no lock: a
 * reader retries when the counter moved meanwhile; chunks and outgrown top arrays are never
 * unmapped, and top-level slots are written one atomic store at a time, so a reader never
 * follows a torn pointer. Each thread also keeps its last 8 containment hits, valid while the
 * counter is unchanged, so repeated launches on the same buffers rarely bisect at all. Ranges
 * are [addr, addr + size) with the charged size; entries of size 0 hold nothing. A range that
 * overlaps an older one (only after a free the shim missed) is found only where it is the
 * nearest below.
 *
 * REGISTRY_HANDLE has no address order: REGISTRY_SHARDS chained hash tables, each under its own
 * spin lock, the key choosing the shard. */
#ifndef MEMSHIM_REGISTRY_H
#define MEMSHIM_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

enum registry_ns {
    REGISTRY_ADDR = 0,   /* device pointers */
    REGISTRY_HANDLE = 1, /* CUmemGenericAllocationHandle of cuMemCreate */
    REGISTRY_MAP = 2,    /* cuMemMap: address -> handle */
};

struct registry_entry {
    uint64_t addr; /* key */
    uint64_t size; /* bytes charged */
    uint64_t requested;
    uint64_t handle; /* REGISTRY_MAP: the mapped handle */
    uint32_t site;
    uint8_t kind;
    uint8_t category;
    uint8_t device;
    uint8_t flags;
};

#define REGISTRY_SHARDS 64

/* Insert. 0: new key; 1: the key was live and is replaced, its old entry copied to
 * `displaced` (a free the shim did not see); -1: out of memory (nothing inserted). */
int registry_insert(enum registry_ns ns, const struct registry_entry *e,
                    struct registry_entry *displaced);
/* Remove; 1 and the entry in `out` (may be NULL) when found, 0 when unknown. */
int registry_remove(enum registry_ns ns, uint64_t addr, struct registry_entry *out);
/* Copy of a live entry; 1 when found. */
int registry_lookup(enum registry_ns ns, uint64_t addr, struct registry_entry *out);
/* Live entries of a namespace (exact when quiescent). */
size_t registry_count(enum registry_ns ns);
/* Call fn on a copy of every live entry. REGISTRY_HANDLE: shard by shard under its lock, so fn
 * must not call back into the registry; the indexed namespaces hand fn copies, a chunk at a
 * time with no lock held, in address order. */
void registry_foreach(enum registry_ns ns, void (*fn)(const struct registry_entry *e, void *ctx),
                      void *ctx);
/* The live entry whose range holds `addr` (REGISTRY_ADDR and REGISTRY_MAP; 0 for any other
 * namespace). 1 and a copy in `out` when found. Lock-free; safe concurrently with updates. */
int registry_containing(enum registry_ns ns, uint64_t addr, struct registry_entry *out);

/* Every address registry_containing(ns, ...) can find lies in [*lo, *hi) (both 0 when the
 * namespace holds nothing): a first test for the words of a kernel's parameters, most of which
 * are sizes and strides, not device addresses. The bounds only widen while entries live, so an
 * allocation inserted before this call (a pointer the caller was handed) is inside them. */
void registry_bounds(enum registry_ns ns, uint64_t *lo, uint64_t *hi);

/* The state of REGISTRY_ADDR and REGISTRY_MAP: every update of either moves it on, twice (odd
 * while in progress), so two equal readings with every half even saw the same entries in
 * between, and registry_containing answered every address alike. Lock-free. */
#define REGISTRY_VERSION_STEADY(v) (((v)&0x100000001ull) == 0)
uint64_t registry_version(void);

/* Change the category of the live entry at exactly `addr` (and its copy in the containment
 * index). 1 and the entry as it was in `old` (may be NULL) when found, 0 when unknown. */
int registry_set_category(enum registry_ns ns, uint64_t addr, uint8_t category,
                          struct registry_entry *old);

/* Inserts (new keys and replacements) and removals of a namespace since the start or the last
 * reset. Counted under the writers' lock, so the allocation path pays no atomic for them. */
void registry_totals(enum registry_ns ns, uint64_t *inserted, uint64_t *removed);

/* Empty every shard (fork child, tests). Not concurrent with other calls. */
void registry_reset(void);

#endif /* MEMSHIM_REGISTRY_H */
