/* residency_blocks: GEMM outputs that are blocks of a chunk. Allocations below MEMSHIM_SPILL_MIN
 * share chunks whose physical memory is one unit, so a block never leaves alone; but when its
 * chunk leaves, a block that a recorded GEMM produced need not be copied: it is dropped with the
 * chunk (nothing kept) while the other blocks are copied out, and when the chunk comes back the
 * others are copied in and the GEMM is replayed into it. Which blocks: under recompute every one
 * that may be dropped; under auto those whose replay costs less than their copies out and in.
 * A chunk with dropped blocks is always unmapped while away (never host-mapped): an access the
 * shim does not see faults instead of reading what was never copied. res_lock held throughout. */
#include "residency_range.h"

#include "arena.h"
#include "budget.h"
#include "clock.h"
#include "log.h"
#include "measure.h"
#include "trace.h"

/* Blocks dropped with one chunk at most: the inputs of their replays are protected on the
 * stack while the chunk comes back. */
#define RES_CHUNK_DROPS   16
#define RES_CHUNK_PROTECT (1 + RES_CHUNK_DROPS * (LINEAGE_MAX_IN + 1))

static int res_chunk_depth; /* chunks coming back, nested through the inputs of their replays */

static int res_in(const struct res_range *r, uint64_t addr)
{
    return addr - r->addr < r->size;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

struct lineage *res_lin_of(uint64_t base)
{
    struct res_range *r = res_find(base);
    if (!r)
        return NULL;
    if (!r->chunk)
        return r->addr == base ? r->lin : NULL;
    for (struct lineage *l = lineage_first(); l; l = l->next)
        if (l->out == base)
            return l;
    return NULL;
}

int res_out_dropped(const struct lineage *l)
{
    struct res_range *y = res_find(l->out);
    return y && (y->chunk ? l->dropped : y->state == RES_DROPPED);
}

int res_bring_back(struct lineage *l, int depth)
{
    struct res_range *y = res_find(l->out);
    if (!y)
        return -1;
    return y->chunk ? res_restore(y, MST_RES_RESTORE) : res_recompute(y, depth);
}

void res_block_forget(struct res_range *r, uint64_t addr)
{
    struct lineage *l = res_lin_of(addr);
    if (!l || !r->chunk)
        return;
    if (l->dropped) {
        l->dropped = 0;
        r->ndropped--;
    }
    lineage_forget(l);
}

/* The bytes on the device while the block `l` produced is replayed into chunk r: the chunk and
 * the ranges holding its inputs and workspace. */
static uint64_t res_replay_bytes(const struct res_range *r, const struct lineage *l)
{
    const struct res_range *seen[LINEAGE_MAX_IN + 2] = {r};
    unsigned n = 1;
    uint64_t total = r->size;
    uint64_t need[LINEAGE_MAX_IN + 1];
    unsigned nneed = 0;
    for (unsigned i = 0; i < l->nin; i++)
        need[nneed++] = l->in[i];
    if (l->ws_bytes)
        need[nneed++] = l->ws;
    for (unsigned i = 0; i < nneed; i++) {
        const struct res_range *in = res_find(need[i]);
        int dup = !in;
        for (unsigned j = 0; j < n && !dup; j++)
            dup = seen[j] == in;
        if (!dup) {
            seen[n++] = in;
            total += in->size;
        }
    }
    return total;
}

/* Whether the block `l` produced, of `bytes`, may be dropped with chunk r: its inputs must be
 * there before its replay (none dropped in this chunk, since the chunk's replays run in no
 * particular order; nor may a dropped output of this chunk read it), chains stay within
 * LINEAGE_MAX_DEPTH, and under auto the replay must cost less than the copies. Bringing it back
 * needs the chunk and its inputs on the device at once, besides what the access that brings it
 * back holds: the drop is refused when that takes more than half the ceiling (a copy back would
 * need the chunk alone), so that a drop never turns a ceiling at which spilling works into an
 * out-of-memory. */
static int res_block_droppable(const struct res_range *r, const struct lineage *l, uint64_t bytes,
                               int by_cost, uint64_t ceiling)
{
    if (ceiling && res_replay_bytes(r, l) > ceiling / 2)
        return 0;
    for (unsigned i = 0; i < l->nin; i++) {
        const struct lineage *in = res_in(r, l->in[i]) ? res_lin_of(l->in[i]) : NULL;
        if (in && in->dropped)
            return 0;
    }
    for (const struct lineage *m = lineage_first(); m; m = m->next)
        if (m->dropped && res_in(r, m->out) && lineage_reads(m, l->out))
            return 0;
    int depth = 1 + res_depth_down(l, LINEAGE_MAX_DEPTH) + res_depth_up(l->out, LINEAGE_MAX_DEPTH);
    if (depth > LINEAGE_MAX_DEPTH)
        return 0;
    return !by_cost ||
           measure_recompute_ns(r->device, l->flops) < measure_spill_ns(r->device, bytes);
}

/* Mark the blocks of r to drop with it: how many, with their bytes in *bytes and FLOPs in
 * *flops. `by_cost`: auto's rule (the rates are known by then). */
static unsigned res_chunk_mark(struct res_range *r, int by_cost, uint64_t *bytes, uint64_t *flops)
{
    unsigned n = 0;
    *bytes = *flops = 0;
    if (!res_remat || (res_auto && !by_cost) || r->exposed || !lineage_first())
        return 0;
    struct budget_snapshot b;
    budget_snapshot(r->device, &b);
    uint64_t size = 0;
    for (uint64_t a = backing_chunk_next(r->chunk, r->addr, &size); a && n < RES_CHUNK_DROPS;
         a = backing_chunk_next(r->chunk, a + size, &size)) {
        struct lineage *l = res_lin_of(a);
        if (!l || l->dropped || !res_block_droppable(r, l, size, by_cost, b.ceiling))
            continue;
        l->dropped = 1;
        n++;
        *bytes += size;
        *flops = add_sat(*flops, l->flops);
    }
    return n;
}

static void res_chunk_unmark(struct res_range *r)
{
    uint64_t size = 0;
    for (uint64_t a = backing_chunk_next(r->chunk, r->addr, &size); a;
         a = backing_chunk_next(r->chunk, a + size, &size)) {
        struct lineage *l = res_lin_of(a);
        if (l)
            l->dropped = 0;
    }
}

uint64_t res_chunk_cost(struct res_range *r)
{
    uint64_t bytes, flops;
    if (res_chunk_mark(r, 1, &bytes, &flops) == 0)
        return measure_spill_ns(r->device, r->size);
    res_chunk_unmark(r);
    return add_sat(measure_spill_ns(r->device, r->chunk->used - bytes),
                   measure_recompute_ns(r->device, flops));
}

/* One record per block: a SPILL for each copied, a DROP for each dropped (or a RESTORE and a
 * RECOMPUTE when it comes back), so that bytes moved are bytes copied. */
static void res_chunk_records(struct res_range *r, uint8_t kept, uint8_t dropped, uint64_t t0)
{
    uint64_t size = 0;
    for (uint64_t a = backing_chunk_next(r->chunk, r->addr, &size); a;
         a = backing_chunk_next(r->chunk, a + size, &size)) {
        struct lineage *l = res_lin_of(a);
        int gone = l && l->dropped;
        res_record_at(gone ? dropped : kept, r, a, size, t0,
                      gone && dropped == MST_RES_RECOMPUTE ? l->flops : 0);
        if (!gone) {
            atomic_fetch_add(kept == MST_RES_SPILL ? &res_spills : &res_restores, 1);
            atomic_fetch_add(kept == MST_RES_SPILL ? &res_spilled_bytes : &res_restored_bytes,
                             size);
        } else if (dropped == MST_RES_DROP) {
            atomic_fetch_add(&res_drops, 1);
            atomic_fetch_add(&res_dropped_bytes, size);
        } else {
            atomic_fetch_add(&res_recomputes, 1);
            atomic_fetch_add(&res_recompute_flops, l->flops);
        }
    }
}

/* Copy the blocks of r that are not dropped between device and host (to the host when `out`). */
static int res_chunk_copy(struct res_range *r, int out)
{
    uint64_t size = 0;
    for (uint64_t a = backing_chunk_next(r->chunk, r->addr, &size); a;
         a = backing_chunk_next(r->chunk, a + size, &size)) {
        struct lineage *l = res_lin_of(a);
        if (l && l->dropped)
            continue;
        char *h = (char *)r->host + (a - r->addr);
        int rc = out ? backing_copy_dtoh(h, a, size) : backing_copy_htod(a, h, size);
        if (rc != 0)
            return rc;
    }
    return 0;
}

int res_chunk_evict(struct res_range *r, int by_cost)
{
    uint64_t dbytes, flops, S = r->size, t0 = clock_now_ns();
    unsigned n = res_chunk_mark(r, by_cost, &dbytes, &flops);
    if (n == 0)
        return res_spill(r);
    int rc;
    if (budget_reserve(BUDGET_HOST, S) < 0) { /* the host mapping is the chunk's size */
        res_chunk_unmark(r);
        return -1;
    }
    if ((rc = backing_ensure_context(r->device)) != 0 || (rc = backing_sync()) != 0)
        goto fail;
    if (!(r->host = arena_map(S))) {
        rc = 2; /* CUDA_ERROR_OUT_OF_MEMORY */
        goto fail;
    }
    if ((rc = res_chunk_copy(r, 1)) != 0)
        goto fail;
    backing_unmap(r->addr, S, r->handle);
    r->handle = 0;
    r->state = RES_UNMAPPED;
    r->ndropped = (uint16_t)n;
    res_chunk_records(r, MST_RES_SPILL, MST_RES_DROP, t0);
    res_device_out(r);
    return 0;
fail:
    if (r->host)
        arena_unmap(r->host, S);
    r->host = NULL;
    res_chunk_unmark(r);
    budget_release(BUDGET_HOST, S);
    res_log_once("spill", rc);
    return -1;
}

/* The ranges the replays of r's dropped blocks read (inputs and workspaces), r first, marked
 * in_call so that making room never takes them; their old marks in was[]. */
static size_t res_chunk_protect(struct res_range *r, struct res_range **prot, uint8_t *was)
{
    size_t np = 0;
    prot[np] = r;
    was[np++] = r->in_call;
    r->in_call = 1;
    for (struct lineage *l = lineage_first(); l; l = l->next) {
        if (!l->dropped || !res_in(r, l->out))
            continue;
        uint64_t need[LINEAGE_MAX_IN + 1];
        unsigned nneed = 0;
        for (unsigned i = 0; i < l->nin; i++)
            need[nneed++] = l->in[i];
        if (l->ws_bytes)
            need[nneed++] = l->ws;
        for (unsigned i = 0; i < nneed && np < RES_CHUNK_PROTECT; i++) {
            struct res_range *in = res_find(need[i]);
            int seen = !in;
            for (size_t j = 0; j < np && !seen; j++)
                seen = prot[j] == in;
            if (seen)
                continue;
            prot[np] = in;
            was[np++] = in->in_call;
            in->in_call = 1;
        }
    }
    return np;
}

/* Map r's device memory back, copy its kept blocks in and replay its dropped ones. */
static int res_chunk_fill(struct res_range *r)
{
    uint64_t S = r->size, hd = 0, t0;
    int rc;
    budget_release(BUDGET_HOST, S);
    if (budget_reserve(r->device, S) < 0 &&
        (res_make_room_locked(r->device, S) < 0 || budget_reserve(r->device, S) < 0)) {
        res_rehost(S);
        return -1;
    }
    t0 = clock_now_ns();
    if ((rc = backing_ensure_context(r->device)) != 0 || (rc = backing_sync()) != 0 ||
        (rc = backing_map(r->device, 0, r->addr, S, &hd)) != 0) {
        budget_release(r->device, S);
        res_rehost(S);
        res_log_once("restore", rc);
        return -1;
    }
    r->handle = hd;
    if ((rc = res_chunk_copy(r, 0)) != 0) {
        backing_unmap(r->addr, S, hd);
        r->handle = 0;
        budget_release(r->device, S);
        res_rehost(S);
        res_log_once("restore", rc);
        return -1;
    }
    int result = 0;
    for (struct lineage *l = lineage_first(); l; l = l->next)
        if (l->dropped && res_in(r, l->out) && (rc = lineage_replay(l)) != 0)
            result = -1;
    if (result == 0 && (rc = backing_sync()) != 0)
        result = -1;
    if (result < 0) /* past the point of no return: the kept blocks are back, these are not */
        log_error("recompute: replaying a GEMM into %#llx failed (%d); its dropped blocks' "
                  "contents are lost",
                  (unsigned long long)r->addr, rc);
    arena_unmap(r->host, S);
    r->host = NULL;
    r->state = RES_RESIDENT;
    res_chunk_records(r, MST_RES_RESTORE, MST_RES_RECOMPUTE, t0);
    res_chunk_unmark(r);
    r->ndropped = 0;
    res_device_in(r);
    return result;
}

int res_chunk_restore(struct res_range *r)
{
    struct res_range *prot[RES_CHUNK_PROTECT];
    uint8_t was[RES_CHUNK_PROTECT];
    if (res_chunk_depth >= LINEAGE_MAX_DEPTH) {
        log_error("recompute: chain too deep to bring back %#llx", (unsigned long long)r->addr);
        return -1;
    }
    res_chunk_depth++;
    size_t np = res_chunk_protect(r, prot, was);
    int result = 0;
    for (size_t i = 1; i < np && result == 0; i++) {
        if (prot[i]->state == RES_DROPPED    ? res_recompute(prot[i], res_chunk_depth + 1) < 0
            : prot[i]->state != RES_RESIDENT ? res_restore(prot[i], MST_RES_RESTORE) < 0
                                             : 0)
            result = -1;
    }
    if (result == 0)
        result = res_chunk_fill(r);
    for (size_t i = 0; i < np; i++)
        prot[i]->in_call = was[i];
    res_chunk_depth--;
    return result;
}
