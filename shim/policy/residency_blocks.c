/* residency_blocks: GEMM outputs that are blocks of a chunk. Allocations below MEMSHIM_SPILL_MIN
 * share chunks whose physical memory is one unit, so a block never leaves alone; but when its
 * chunk leaves, a block that a recorded GEMM produced need not be copied: it is dropped with the
 * chunk (nothing kept) while the other blocks are copied out. When the chunk comes back only the
 * others are copied in; a dropped block stays dropped (its bytes there, its contents not) until
 * an operation uses it, or may write one of its inputs, and its GEMM is replayed into it then.
 * So bringing a chunk back never needs anything but room for the chunk, and a replay needs only
 * its own inputs. Which blocks: under recompute every one that may be dropped; under auto those
 * whose replay costs less than their copies out and in. A chunk with dropped blocks is unmapped
 * while away (never host-mapped). res_lock held throughout. */
#include "residency_range.h"

#include "arena.h"
#include "budget.h"
#include "clock.h"
#include "log.h"
#include "measure.h"
#include "trace.h"

/* Blocks dropped with one chunk at a time, at most. */
#define RES_CHUNK_DROPS 16
/* l->dropped: 1 dropped; 2 chosen to be dropped by the move under way. */
#define RES_DROPPING 2

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

int res_block_chained(const struct lineage *l)
{
    for (unsigned i = 0; i < l->nin; i++) {
        const struct lineage *in = res_lin_of(l->in[i]);
        if (in && in->dropped)
            return 1;
    }
    if (lineage_may_read(l->out))
        for (const struct lineage *m = lineage_first(); m; m = m->next)
            if (m->dropped && lineage_reads(m, l->out))
                return 1;
    return 0;
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
    if (!y->chunk)
        return res_recompute(y, depth);
    if (y->state != RES_RESIDENT && res_restore(y) < 0)
        return -1;
    return res_block_replay(y, l, depth);
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
static uint64_t res_replay_bytes(struct res_range *r, const struct lineage *l)
{
    struct res_range *need[LINEAGE_MAX_IN + 2];
    size_t n = res_replay_ranges(r, l, need);
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += need[i]->size;
    return total;
}

/* Whether the block `l` produced, of `bytes`, may be dropped with chunk r: none of its inputs is
 * dropped and no dropped output reads it (a chain would need more room to come back), and
 * under auto the replay must cost less than the copies. And room: bringing it back needs the
 * chunk and the ranges of its inputs on the device at once, besides what the operation that
 * brings it back holds (an access to the chunk, or a write to an input, which comes first); a
 * copy back would need the chunk alone. So the drop is refused unless that set fits beside the
 * largest operation seen so far, and in half the ceiling: a drop must not turn a ceiling at
 * which spilling works into an out-of-memory. */
static int res_block_droppable(struct res_range *r, const struct lineage *l, uint64_t bytes,
                               int by_cost, uint64_t ceiling)
{
    uint64_t need = res_replay_bytes(r, l);
    if (ceiling && (need > ceiling / 2 || need + res_op_peak > ceiling))
        return 0;
    if (res_depth_down(l, 1) || res_depth_up(l->out, 1))
        return 0;
    return !by_cost ||
           measure_recompute_ns(r->device, l->flops) < measure_spill_ns(r->device, bytes);
}

/* Choose the blocks of r to drop with it (l->dropped = RES_DROPPING): how many, with in *bytes
 * those and the blocks dropped before, and in *flops the chosen ones' FLOPs. `by_cost`: auto's
 * rule (the rates are known by then). */
static unsigned res_chunk_mark(struct res_range *r, int by_cost, uint64_t *bytes, uint64_t *flops)
{
    unsigned n = 0;
    *bytes = *flops = 0;
    if (!res_remat || (res_auto && !by_cost) || !lineage_first())
        return 0;
    struct budget_snapshot b;
    budget_snapshot(r->device, &b);
    uint64_t size = 0;
    for (uint64_t a = backing_chunk_next(r->chunk, r->addr, &size); a;
         a = backing_chunk_next(r->chunk, a + size, &size)) {
        struct lineage *l = res_lin_of(a);
        if (l && !l->dropped && n < RES_CHUNK_DROPS && !r->exposed &&
            res_block_droppable(r, l, size, by_cost, b.ceiling)) {
            l->dropped = RES_DROPPING;
            n++;
            *flops = add_sat(*flops, l->flops);
        }
        if (l && l->dropped)
            *bytes += size;
    }
    return n;
}

/* Undo res_chunk_mark (`keep`: the move was made, the chosen blocks are dropped). */
static void res_chunk_unmark(struct res_range *r, int keep)
{
    uint64_t size = 0;
    for (uint64_t a = backing_chunk_next(r->chunk, r->addr, &size); a;
         a = backing_chunk_next(r->chunk, a + size, &size)) {
        struct lineage *l = res_lin_of(a);
        if (l && l->dropped == RES_DROPPING) {
            l->dropped = keep ? 1 : 0;
            r->ndropped += keep;
        }
    }
}

uint64_t res_chunk_cost(struct res_range *r)
{
    uint64_t bytes, flops;
    res_chunk_mark(r, 1, &bytes, &flops);
    res_chunk_unmark(r, 0);
    if (bytes == 0)
        return measure_spill_ns(r->device, r->size);
    return add_sat(measure_spill_ns(r->device, r->chunk->used - bytes),
                   measure_recompute_ns(r->device, flops));
}

/* One record per block, so that bytes moved are bytes copied: leaving, a SPILL for each block
 * copied and a DROP for each dropped now; coming back, a RESTORE for each copied (a dropped one
 * gets its RECOMPUTE when it is replayed). */
static void res_chunk_records(struct res_range *r, int leaving, uint64_t t0)
{
    uint64_t size = 0;
    for (uint64_t a = backing_chunk_next(r->chunk, r->addr, &size); a;
         a = backing_chunk_next(r->chunk, a + size, &size)) {
        struct lineage *l = res_lin_of(a);
        if (l && l->dropped == RES_DROPPING) {
            res_record_at(MST_RES_DROP, r, a, size, t0, 0);
            atomic_fetch_add(&res_drops, 1);
            atomic_fetch_add(&res_dropped_bytes, size);
        } else if (!l || !l->dropped) {
            res_record_at(leaving ? MST_RES_SPILL : MST_RES_RESTORE, r, a, size, t0, 0);
            atomic_fetch_add(leaving ? &res_spills : &res_restores, 1);
            atomic_fetch_add(leaving ? &res_spilled_bytes : &res_restored_bytes, size);
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
    if (res_chunk_mark(r, by_cost, &dbytes, &flops) == 0 && r->ndropped == 0)
        return res_spill(r);
    int rc;
    if (budget_reserve(BUDGET_HOST, S) < 0) { /* the host mapping is the chunk's size */
        res_chunk_unmark(r, 0);
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
    res_chunk_records(r, 1, t0);
    res_chunk_unmark(r, 1);
    res_device_out(r);
    return 0;
fail:
    if (r->host)
        arena_unmap(r->host, S);
    r->host = NULL;
    res_chunk_unmark(r, 0);
    budget_release(BUDGET_HOST, S);
    res_log_once("spill", rc);
    return -1;
}

int res_chunk_fill(struct res_range *r)
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
        (rc = backing_map(r->device, 0, r->addr, S, &hd)) != 0)
        goto fail;
    r->handle = hd;
    if ((rc = res_chunk_copy(r, 0)) != 0) {
        backing_unmap(r->addr, S, hd);
        r->handle = 0;
        goto fail;
    }
    arena_unmap(r->host, S);
    r->host = NULL;
    r->state = RES_RESIDENT;
    res_chunk_records(r, 0, t0);
    res_device_in(r);
    return 0;
fail:
    return res_restore_failed(r->device, S, rc);
}

int res_block_replay(struct res_range *r, struct lineage *l, int depth)
{
    struct res_replay_guard g;
    uint64_t size = 0, t0;
    int result = -1, rc = 0;
    if (depth > LINEAGE_MAX_DEPTH || backing_chunk_next(r->chunk, l->out, &size) != l->out) {
        log_error("recompute: cannot replay the GEMM of %#llx", (unsigned long long)l->out);
        return -1;
    }
    if (res_replay_guard(&g, r, l, depth) < 0)
        goto out;
    /* An input that is itself a dropped block (never chosen so: res_block_droppable) first. */
    for (unsigned i = 0; i < l->nin; i++) {
        struct lineage *in = res_lin_of(l->in[i]);
        struct res_range *ir = res_find(l->in[i]);
        if (in && in != l && in->dropped && ir && ir->chunk &&
            res_block_replay(ir, in, depth + 1) < 0)
            goto out;
    }
    t0 = clock_now_ns();
    if ((rc = backing_ensure_context(r->device)) != 0 || (rc = lineage_replay(l)) != 0 ||
        (rc = backing_sync()) != 0) {
        log_error("recompute: replaying the GEMM of %#llx failed (%d); the access is reported "
                  "out of memory",
                  (unsigned long long)l->out, rc);
        goto out;
    }
    l->dropped = 0;
    r->ndropped--;
    res_record_at(MST_RES_RECOMPUTE, r, l->out, size, t0, l->flops);
    atomic_fetch_add(&res_recomputes, 1);
    atomic_fetch_add(&res_recompute_flops, l->flops);
    result = 0;
out:
    res_replay_unguard(&g);
    return result;
}
