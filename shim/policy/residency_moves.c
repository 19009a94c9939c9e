/* residency_moves: a range's contents moved between device and host memory (spill, restore),
 * the device budget settled for each move, the trace record of each, and making room on a
 * device by choosing victims to spill or drop. res_lock held throughout. */
#include "residency_range.h"

#include "arena.h"
#include "budget.h"
#include "clock.h"
#include "log.h"
#include "measure.h"
#include "real.h"
#include "registry.h"
#include "trace.h"

/* ---- moves (res_lock held) ---- */

void res_record_at(uint8_t event, const struct res_range *r, uint64_t addr, uint64_t bytes,
                   uint64_t t0, uint64_t flops)
{
    if (!trace_enabled())
        return;
    uint64_t now = clock_now_ns();
    struct mst_rec_residency rec = {.time_ns = t0,
                                    .addr = addr,
                                    .bytes = bytes,
                                    .duration_ns = now - t0,
                                    .flops = flops,
                                    .thread = trace_thread_id(),
                                    .event = event,
                                    .device = r->device};
    trace_touch();
    trace_record(MST_REC_RESIDENCY, &rec, sizeof rec, NULL, 0);
}

void res_record_flops(uint8_t event, const struct res_range *r, uint64_t t0, uint64_t flops)
{
    res_record_at(event, r, r->addr, r->size, t0, flops);
}

void res_record(uint8_t event, const struct res_range *r, uint64_t t0)
{
    res_record_flops(event, r, t0, 0);
}

/* The category the registry gives the allocation at addr now, or `known` when it has none (the
 * allocation is on its way in or out). A retag (track_retag: cuBLAS workspace) moves committed
 * bytes between categories without telling residency, so a move reads it here. */
static uint8_t res_category_now(uint64_t addr, uint8_t known)
{
    struct registry_entry e;
    return registry_lookup(REGISTRY_ADDR, addr, &e) ? e.category : known;
}

/* r's device bytes leave the device budget (spill, drop). An own range is one allocation of its
 * category. A chunk is its allocated blocks, each committed to its category, plus the
 * reservation for its free blocks: together exactly the chunk's size. The categories read now
 * are kept (r->category, the chunk's block tags) so that res_device_in puts back exactly what
 * left. */
void res_device_out(struct res_range *r)
{
    if (!r->chunk) {
        r->category = res_category_now(r->addr, r->category);
        budget_free(r->device, r->category, r->size);
        return;
    }
    uint64_t size = 0;
    for (uint64_t a = backing_chunk_next(r->chunk, r->addr, &size); a;
         a = backing_chunk_next(r->chunk, a + size, &size)) {
        uint8_t cat = res_category_now(a, (uint8_t)backing_chunk_tag(r->chunk, a));
        backing_chunk_set_tag(r->chunk, a, cat);
        budget_uncommit(r->device, cat, size);
    }
    budget_release(r->device, r->size);
}

/* r is back on the device and r->size is reserved there: commit what res_device_out took off.
 * A retag while r was away already moved its bytes from the kept category to the new one, so
 * committing the kept one leaves each allocation counted once, in its new category. */
void res_device_in(struct res_range *r)
{
    if (!r->chunk) {
        budget_commit(r->device, r->category, r->size);
        return;
    }
    uint64_t size = 0;
    for (uint64_t a = backing_chunk_next(r->chunk, r->addr, &size); a;
         a = backing_chunk_next(r->chunk, a + size, &size))
        budget_commit(r->device, (uint8_t)backing_chunk_tag(r->chunk, a), size);
}

/* An allocation of `bytes` freed while its range is off the device, kept as `kept`, freed as
 * `now`: a retag while it was away moved device bytes it did not hold from kept to now; undo. */
void res_settle_retag(int device, uint8_t kept, uint8_t now, uint64_t bytes)
{
    if (kept == now)
        return;
    budget_commit(device, kept, bytes);
    budget_uncommit(device, now, bytes);
}

/* Move r's contents into new physical memory (host-located when `host`, else device) at the
 * same address: filled through a temporary mapping, then mapped in place of the old memory.
 * Returns 0 with the new handle in *out, or the CUDA error while r is still unchanged. Mapping
 * the new memory in place is the one failure after the point of no return (the old memory is
 * gone, the contents live only in *out): it is logged and the move counts as done. */
static int res_swap_physical(struct res_range *r, int host, const char *what, uint64_t *out)
{
    uint64_t S = r->size, tmp = 0, h = 0;
    int rc;
    if ((rc = backing_reserve(S, &tmp)) != 0)
        return rc;
    if ((rc = backing_map(r->device, host, tmp, S, &h)) != 0) {
        backing_unreserve(tmp, S);
        return rc;
    }
    if ((rc = backing_copy_dtod(tmp, r->addr, S)) != 0) {
        backing_unmap(tmp, S, h);
        backing_unreserve(tmp, S);
        return rc;
    }
    backing_unmap(tmp, S, 0);
    backing_unreserve(tmp, S);
    backing_unmap(r->addr, S, r->handle);
    r->handle = 0;
    if ((rc = backing_map_handle(r->device, r->addr, S, h)) != 0)
        log_error("%s: cannot map %s memory at %#llx (CUDA error %d)", what,
                  host ? "host" : "device", (unsigned long long)r->addr, rc);
    *out = h;
    return 0;
}

int res_spill(struct res_range *r)
{
    uint64_t S = r->size, t0 = clock_now_ns();
    int rc;
    if (budget_reserve(BUDGET_HOST, S) < 0)
        return -1;
    if ((rc = backing_ensure_context(r->device)) != 0 || (rc = backing_sync()) != 0)
        goto fail;
    if (backing_host_vmm(r->device)) {
        uint64_t hh = 0;
        if ((rc = res_swap_physical(r, 1, "spill", &hh)) != 0)
            goto fail;
        r->handle = hh;
        r->state = RES_HOST_MAPPED;
    } else {
        void *h = arena_map(S);
        if (!h) {
            rc = 2; /* CUDA_ERROR_OUT_OF_MEMORY */
            goto fail;
        }
        if ((rc = backing_copy_dtoh(h, r->addr, S)) != 0) {
            arena_unmap(h, S);
            goto fail;
        }
        backing_unmap(r->addr, S, r->handle);
        r->handle = 0;
        r->host = h;
        r->state = RES_UNMAPPED;
    }
    /* Recorded before the budget lets the bytes go, so that no allocation another thread
     * makes with them comes first in the trace. */
    res_record(MST_RES_SPILL, r, t0);
    res_device_out(r);
    atomic_fetch_add(&res_spills, 1);
    atomic_fetch_add(&res_spilled_bytes, S);
    return 0;
fail:
    budget_release(BUDGET_HOST, S);
    res_log_once("spill", rc);
    return -1;
}

/* A failed restore: its bytes are on the host after all. Past the limit only if another
 * spill took the room meanwhile; then the count is short until the range is freed. */
void res_rehost(uint64_t bytes)
{
    if (budget_reserve(BUDGET_HOST, bytes) < 0)
        log_error("spill: host limit exceeded by %llu bytes after a failed restore",
                  (unsigned long long)bytes);
}

int res_restore_failed(int device, uint64_t bytes, int rc)
{
    budget_release(device, bytes);
    res_rehost(bytes);
    res_log_once("restore", rc);
    return -1;
}

int res_restore(struct res_range *r)
{
    uint64_t S = r->size, t0;
    int rc;
    /* Pinned while in host memory: another thread's call is reading or writing it there now
     * (res_use_on_host). A swap copies, then remaps: what that call writes after the copy would
     * be lost. It stays where it is until that call is done; meanwhile it is used there too. */
    if (r->state == RES_HOST_MAPPED && r->pins)
        return -1;
    if (r->ndropped) /* its kept blocks copied back (only into room made for it) */
        return res_chunk_fill(r);
    /* A swap: the victims this restore displaces need host room while r still holds its own,
     * so r's host bytes are given back first (the host limit may be exceeded by one range for
     * the duration of the copy). */
    budget_release(BUDGET_HOST, S);
    if (budget_reserve(r->device, S) < 0 &&
        (res_make_room_locked(r->device, S) < 0 || budget_reserve(r->device, S) < 0)) {
        res_rehost(S);
        return -1;
    }
    /* Timed after making room: the spills it caused are recorded first, so the restore's record
     * must not carry an earlier time than theirs. */
    t0 = clock_now_ns();
    if ((rc = backing_ensure_context(r->device)) != 0 || (rc = backing_sync()) != 0)
        goto fail;
    uint64_t hd = 0;
    if (r->state == RES_HOST_MAPPED) {
        if ((rc = res_swap_physical(r, 0, "restore", &hd)) != 0)
            goto fail;
    } else {
        if ((rc = backing_map(r->device, 0, r->addr, S, &hd)) != 0)
            goto fail;
        if ((rc = backing_copy_htod(r->addr, r->host, S)) != 0) {
            backing_unmap(r->addr, S, hd);
            goto fail;
        }
        arena_unmap(r->host, S);
        r->host = NULL;
    }
    r->handle = hd;
    r->state = RES_RESIDENT;
    res_device_in(r);
    atomic_fetch_add(&res_restores, 1);
    atomic_fetch_add(&res_restored_bytes, S);
    res_record(MST_RES_RESTORE, r, t0);
    return 0;
fail:
    return res_restore_failed(r->device, S, rc);
}

static int res_make_room_as(int device, uint64_t need, int by_cost)
{
    struct budget_snapshot b;
    budget_snapshot(device, &b);
    if (!b.ceiling)
        return 0;
    if (need > b.ceiling)
        return -1;
    uint64_t room = b.resident < b.ceiling ? b.ceiling - b.resident : 0;
    if (need <= room)
        return 0;
    uint64_t deficit = need - room;
    int forecast = nextuse_ready(&res_nu);
    size_t n = 0;
    for (size_t i = 0; i < res_count; i++) {
        struct res_range *r = res_table[i];
        /* A chunk is one candidate: its size, its blocks' latest access, in use while any
         * block is (prepare resolves a block to its chunk's range). */
        if (r->device != device || r->state != RES_RESIDENT)
            continue;
        struct victim_candidate *c = &res_cands[n++];
        *c = (struct victim_candidate){.id = i,
                                       .bytes = r->size,
                                       .last_access = r->last_access,
                                       .in_use = (uint8_t)(r->pins || r->in_call || r->serving)};
        if (forecast)
            c->next_use = nextuse_predict(&res_nu, r->nu_key, r->nu_pred, res_tick);
        if (by_cost && !c->in_use && r->chunk) {
            c->cost = res_chunk_cost(r); /* copies, or replays of the blocks dropped with it */
        } else if (by_cost && !c->in_use) {
            /* Having it back: copy out and in at the measured link rates, or replay its GEMM
             * at the measured GEMM rate; the cheaper decides both the action and the rank. */
            uint64_t spill = measure_spill_ns(device, r->size);
            uint64_t remat =
                res_droppable(r) ? measure_recompute_ns(device, r->lin->flops) : MEASURE_UNKNOWN_NS;
            c->action = remat < spill ? VICTIM_RECOMPUTE : VICTIM_SPILL;
            c->cost = remat < spill ? remat : spill;
        }
    }
    uint64_t chosen = 0;
    size_t k = by_cost    ? victim_choose_dtr(res_cands, n, deficit, res_tick, &chosen)
               : forecast ? victim_choose_next(res_cands, n, deficit, &chosen)
                          : victim_choose(res_cands, n, deficit, &chosen);
    if (chosen < deficit)
        return -1;
    /* Indices stay valid: moving changes no range's place in the table. */
    for (size_t i = 0; i < k; i++) {
        struct res_range *r = res_table[res_cands[i].id];
        int rc = r->chunk                                       ? res_chunk_evict(r, by_cost)
                 : res_action(r, &res_cands[i]) == RES_ACT_DROP ? res_drop(r)
                                                                : res_spill(r);
        if (rc < 0)
            return -1;
    }
    return 0;
}

int res_make_room_locked(int device, uint64_t need)
{
    /* The costs are measured on device memory the ceiling counts, at the first need: room for
     * the probe first, by recency since nothing costs anything yet. */
    uint64_t probe = res_auto ? measure_room_needed(device) : 0;
    if (probe && res_make_room_as(device, need + probe, 0) == 0)
        measure_device(device, NULL);
    return res_make_room_as(device, need, res_auto);
}
