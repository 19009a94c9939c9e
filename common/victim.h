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
 * victim_choose_dtr below is the cost-aware alternative (MEMSHIM_POLICY=auto), and
 * victim_choose_next the one that forecasts each candidate's next use from the previous step.
 *
 * last_access is any monotonically increasing counter (the shim uses a global tick bumped on
 * every observed access); an allocation never accessed carries the tick of its allocation, so
 * it ages like any other. */
#ifndef MEMSHIM_VICTIM_H
#define MEMSHIM_VICTIM_H

#include <stddef.h>
#include <stdint.h>

#define VICTIM_LARGE_DIVISOR 4

/* What the caller will do with a victim (victim_choose_dtr carries it, never reads it). */
enum victim_action { VICTIM_SPILL = 0, VICTIM_RECOMPUTE = 1 };

struct victim_candidate {
    uint64_t id;          /* caller's handle (the shim: the allocation's base address) */
    uint64_t bytes;       /* bytes it gives back to the device when moved */
    uint64_t last_access; /* tick of the last observed access (or of its allocation) */
    uint8_t in_use;       /* 1: the current call uses it, never a victim */
    uint8_t action;       /* enum victim_action, the caller's; carried through */
    uint64_t cost;        /* victim_choose_dtr: ns to have it back (the cheaper of spill and
                             recompute, the caller's choice); victim_choose ignores it */
    uint64_t next_use;    /* victim_choose_next: forecast tick of the next use (nextuse.h) */
};

/* Choose victims among c[0..n) for `need` bytes. Permutes c in place so that the victims come
 * first, in the order they should be moved: c[0..k) are the victims, k is returned, and
 * *chosen_bytes (when not NULL) receives their byte total. When the eligible candidates cannot
 * cover need, all of them are returned and *chosen_bytes < need: the caller must then treat the
 * request as out of memory (and should move nothing). O(n log n), no allocation. */
size_t victim_choose(struct victim_candidate *c, size_t n, uint64_t need, uint64_t *chosen_bytes);

/* MEMSHIM_POLICY=auto: Dynamic Tensor Rematerialization's heuristic (Kirisame et al., 2021).
 * Each eligible candidate (as above: bytes > 0, in_use == 0) scores
 *
 *     cost / (bytes * (now - last_access + 1))
 *
 * (last_access > now counts as now): the cheapest to have back per byte freed and per tick
 * of staleness is evicted first. A candidate with a forecast (next_use neither 0 nor
 * UINT64_MAX) counts the ticks until it is needed instead, next_use - now + 1 (1 when past):
 * the cheapest per byte and per tick it can stay away. Order: eligible first, by score ascending
 * (compared exactly, in integers); ties by bytes descending, then id ascending; a total order, so
 * the result never depends on input order. Candidates are taken in that order until their bytes
 * reach need. Same contract as victim_choose: c permuted so that the k victims come first, in that
 * order; k returned; *chosen_bytes their total, below need when the eligible candidates
 * cannot cover it (all of them are then returned; the caller should move nothing). need == 0
 * chooses nothing. O(n log n), no allocation. */
size_t victim_choose_dtr(struct victim_candidate *c, size_t n, uint64_t need, uint64_t now,
                         uint64_t *chosen_bytes);

/* Belady's rule on forecasts (MEMSHIM_POLICY=spill once a step has been seen, nextuse.h): the
 * eligible candidate whose forecast next use is farthest goes first; ties to the least recently
 * used, then the larger, then the lower id (a total order). Taken in that order until their
 * bytes reach need. Same contract as victim_choose. */
size_t victim_choose_next(struct victim_candidate *c, size_t n, uint64_t need,
                          uint64_t *chosen_bytes);

#endif /* MEMSHIM_VICTIM_H */
