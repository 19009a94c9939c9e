/* victim: which allocations to move off the device so that `need` more bytes fit under the
 * ceiling. Pure policy: no CUDA, no locks, no allocation, no clock, so the shim's residency
 * layer and the analyzer's what-if replay ("the shim's own policy as implemented") run the very
 * same code on the same inputs and get the same answer.
 *
 * The rule, exactly:
 *   1. Eligible: every candidate with bytes > 0 and in_use == 0 (an allocation the current
 *      call is about to use is never chosen, whatever else is true of it).
 *   2. Order: least recently used first, by last_access ascending; ties by bytes descending,
 *      then id ascending. The order is total, so the result never depends on input order.
 *   3. First pass, "prefer large": walk that order and take a candidate when its bytes are at
 *      least remaining / VICTIM_LARGE_DIVISOR, where remaining = need minus the bytes taken so
 *      far. A small, old buffer is passed over while a large one nearly as old can make most of
 *      the room in one move (fewer copies, fewer remaps, less fragmentation of the ceiling);
 *      as remaining shrinks, smaller candidates qualify.
 *   4. Second pass, only if the first did not reach need: walk the same order again and take
 *      the candidates the first pass skipped, until need is reached.
 *   Stops as soon as the bytes taken reach need. need == 0 chooses nothing.
 *
 * last_access is any monotonically increasing counter (the shim uses a global tick bumped on
 * every observed access); an allocation never accessed carries the tick of its allocation, so
 * it ages like any other. */
#ifndef MEMSHIM_VICTIM_H
#define MEMSHIM_VICTIM_H

#include <stddef.h>
#include <stdint.h>

#define VICTIM_LARGE_DIVISOR 4

struct victim_candidate {
    uint64_t id;          /* caller's handle (the shim: the allocation's base address) */
    uint64_t bytes;       /* bytes it gives back to the device when moved */
    uint64_t last_access; /* tick of the last observed access (or of its allocation) */
    uint8_t in_use;       /* 1: the current call uses it, never a victim */
};

/* Choose victims among c[0..n) for `need` bytes. Permutes c in place so that the victims come
 * first, in the order they should be moved: c[0..k) are the victims, k is returned, and
 * *chosen_bytes (when not NULL) receives their byte total. When the eligible candidates cannot
 * cover need, all of them are returned and *chosen_bytes < need: the caller must then treat the
 * request as out of memory (and should move nothing). O(n log n), no allocation. */
size_t victim_choose(struct victim_candidate *c, size_t n, uint64_t need, uint64_t *chosen_bytes);

#endif /* MEMSHIM_VICTIM_H */
