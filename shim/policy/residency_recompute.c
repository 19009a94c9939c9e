/* residency_recompute: a GEMM output dropped from the device (nothing kept) and computed again
 * from its lineage when it is used; what may be dropped, and what a write to an input forces
 * back first. res_lock held throughout. */
#include "residency_range.h"

#include "budget.h"
#include "clock.h"
#include "log.h"
#include "measure.h"
#include "trace.h"

/* ---- recompute (res_lock held) ---- */

static void res_remat_log(const char *what, const struct res_range *r, int rc)
{
    if (!res_remat_logged++)
        log_error("recompute: %s of %#llx failed (%d); the access is reported out of memory", what,
                  (unsigned long long)r->addr, rc);
}

/* Longest chain of dropped outputs below l (its inputs, theirs...): 0 when none is dropped. */
int res_depth_down(const struct lineage *l, int budget)
{
    int d = 0;
    if (!l || budget <= 0)
        return 0;
    for (unsigned i = 0; i < l->nin; i++) {
        const struct lineage *in = res_lin_of(l->in[i]);
        if (in && res_out_dropped(in)) {
            int e = 1 + res_depth_down(in, budget - 1);
            d = e > d ? e : d;
        }
    }
    return d;
}

/* Longest chain of dropped outputs computed from the allocation at `out` (directly or through
 * others). */
int res_depth_up(uint64_t out, int budget)
{
    int d = 0;
    if (budget <= 0 || !lineage_may_read(out))
        return 0;
    for (struct lineage *l = lineage_first(); l; l = l->next) {
        if (lineage_reads(l, out) && res_out_dropped(l)) {
            int e = 1 + res_depth_up(l->out, budget - 1);
            d = e > d ? e : d;
        }
    }
    return d;
}

/* Whether r may be dropped now: a valid lineage, not exposed, and every chain of dropped
 * ranges through it within LINEAGE_MAX_DEPTH. */
int res_droppable(const struct res_range *r)
{
    if (!res_remat || r->chunk || !r->lin || r->exposed || res_block_chained(r->lin))
        return 0;
    int depth =
        1 + res_depth_down(r->lin, LINEAGE_MAX_DEPTH) + res_depth_up(r->addr, LINEAGE_MAX_DEPTH);
    return depth <= LINEAGE_MAX_DEPTH;
}

/* The one place that decides how a victim's device memory is freed. `recompute`: drop whatever
 * is droppable, spill the rest. `auto`: what the ranking chose by cost (c->action), if the
 * range is still droppable now (an earlier victim's drop may have lengthened its chain). */
enum res_act res_action(const struct res_range *r, const struct victim_candidate *c)
{
    if (r->chunk) /* no lineage: a chunk is always spilled */
        return RES_ACT_SPILL;
    if (res_auto && c->action != VICTIM_RECOMPUTE)
        return RES_ACT_SPILL;
    return res_droppable(r) ? RES_ACT_DROP : RES_ACT_SPILL;
}

/* Give r's device memory back and keep nothing: its lineage recomputes it. */
int res_drop(struct res_range *r)
{
    uint64_t S = r->size, t0 = clock_now_ns();
    int rc;
    /* Queued work may still read it (or the GEMM that made it may still be writing it). */
    if ((rc = backing_ensure_context(r->device)) != 0 || (rc = backing_sync()) != 0) {
        res_log_once("drop", rc);
        return -1;
    }
    backing_unmap(r->addr, S, r->handle);
    r->handle = 0;
    r->state = RES_DROPPED;
    res_record(MST_RES_DROP, r, t0);
    res_device_out(r);
    atomic_fetch_add(&res_drops, 1);
    atomic_fetch_add(&res_dropped_bytes, S);
    return 0;
}

size_t res_replay_ranges(struct res_range *r, const struct lineage *l,
                         struct res_range *out[LINEAGE_MAX_IN + 2])
{
    size_t n = 0;
    out[n++] = r;
    for (unsigned i = 0; i < l->nin + (l->ws_bytes != 0); i++) {
        struct res_range *in = res_find(i < l->nin ? l->in[i] : l->ws);
        int seen = !in; /* an input in a chunk is the chunk; two inputs may share one */
        for (size_t j = 0; j < n && !seen; j++)
            seen = out[j] == in;
        if (!seen)
            out[n++] = in;
    }
    return n;
}

/* Mark r and the inputs of its GEMM (and the workspace) in_call, so that making room never
 * takes them, and bring each input resident: restored, or recomputed one level deeper.
 * res_replay_unguard undoes the marks, whatever this returned. */
int res_replay_guard(struct res_replay_guard *g, struct res_range *r, const struct lineage *l,
                     int depth)
{
    g->n = res_replay_ranges(r, l, g->r);
    for (size_t i = 0; i < g->n; i++) {
        g->was[i] = g->r[i]->in_call;
        g->r[i]->in_call = 1;
    }
    for (size_t i = 1; i < g->n; i++)
        if (res_make_usable(g->r[i], depth + 1) < 0)
            return -1;
    return 0;
}

void res_replay_unguard(struct res_replay_guard *g)
{
    for (size_t i = 0; i < g->n; i++)
        g->r[i]->in_call = g->was[i];
}

/* Bring a dropped range back: its inputs usable first (restored, recomputed one level deeper,
 * or used in host memory), then device memory mapped at its address, or host memory when the
 * device has no room (MEMSHIM_HOST_USE), and its GEMM replayed into it. The range and its
 * inputs are marked in_call meanwhile, so making room never takes them. */
int res_recompute(struct res_range *r, int depth)
{
    struct lineage *l = r->lin;
    if (!l) {
        res_remat_log("recompute (no valid lineage: contents lost)", r, -1);
        return -1;
    }
    if (depth > LINEAGE_MAX_DEPTH) {
        res_remat_log("recompute (chain too deep)", r, depth);
        return -1;
    }
    struct res_replay_guard g;
    int result = -1, rc = 0;
    uint64_t S = r->size, h = 0, t0;
    if (res_replay_guard(&g, r, l, depth) < 0)
        goto out;
    /* No room on the device beside its inputs: into host memory mapped at its address, where
     * the call uses it (MEMSHIM_HOST_USE), as if it had been spilled. */
    int host = budget_reserve(r->device, S) < 0 &&
               (res_make_room_locked(r->device, S) < 0 || budget_reserve(r->device, S) < 0);
    int slot = host ? BUDGET_HOST : r->device;
    if (host && (!res_host_usable(r->device) || budget_reserve(BUDGET_HOST, S) < 0))
        goto out;
    t0 = clock_now_ns(); /* after making room, like a restore */
    if ((rc = backing_ensure_context(r->device)) != 0 ||
        (rc = backing_map(r->device, host, r->addr, S, &h)) != 0) {
        budget_release(slot, S);
        res_remat_log(host ? "mapping host memory" : "mapping device memory", r, rc);
        goto out;
    }
    if ((rc = lineage_replay(l)) != 0 || (rc = backing_sync()) != 0) {
        backing_unmap(r->addr, S, h);
        budget_release(slot, S);
        res_remat_log("replaying its GEMM", r, rc);
        goto out;
    }
    r->handle = h;
    r->state = host ? RES_HOST_MAPPED : RES_RESIDENT;
    if (host)
        res_host_used(r);
    else
        res_device_in(r);
    atomic_fetch_add(&res_recomputes, 1);
    atomic_fetch_add(&res_recompute_flops, l->flops);
    res_record_flops(host ? MST_RES_HOST_USE : MST_RES_RECOMPUTE, r, t0, l->flops);
    result = 0;
out:
    res_replay_unguard(&g);
    return result;
}

/* The allocation at `base` is about to be written (or may be) or freed: every dropped range
 * computed from it is recomputed first, while it still holds what they were computed from, and
 * every lineage reading it is forgotten. -1 when a recompute failed; `force` (a free, which
 * cannot be refused) forgets that lineage anyway and the range's contents are lost. */
int res_before_write(uint64_t base, int force)
{
    if (!lineage_may_read(base))
        return 0;
    int result = 0;
    struct lineage *next;
    for (struct lineage *l = lineage_first(); l; l = next) {
        next = l->next;
        if (!lineage_reads(l, base))
            continue;
        struct res_range *y = res_find(l->out);
        if (res_out_dropped(l) && res_bring_back(l, 1) < 0) {
            result = -1;
            if (!force)
                continue;
            if (y && y->chunk && l->dropped) { /* lost: no longer counted as dropped */
                y->ndropped--;
                l->dropped = 0;
            }
        }
        /* A recompute forgets no lineage, so `next` is still live. */
        if (y && y->lin == l)
            y->lin = NULL;
        lineage_forget(l);
    }
    return result;
}
