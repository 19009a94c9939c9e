/* residency: see residency.h. The ranges the shim owns live in one array sorted by address
 * (bisection finds the range holding an address); range records come from the arena and are
 * recycled through a free list, with a generation number so a stale pin is recognised. */
#include "residency.h"

#include "arena.h"
#include "backing.h"
#include "budget.h"
#include "clock.h"
#include "compat.h"
#include "lineage.h"
#include "log.h"
#include "measure.h"
#include "options.h"
#include "real.h"
#include "registry.h"
#include "report.h"
#include "trace.h"
#include "victim.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#define RES_PINS    32
#define RES_IN_CALL 128
/* Bytes of a host-to-device copy's source read for device addresses (pointer arrays are
 * small; a bulk upload past this is data). */
#define RES_SCAN_MAX (64u << 10)

/* RES_DROPPED: unmapped with nothing kept; its lineage recomputes it. */
enum res_state { RES_RESIDENT, RES_HOST_MAPPED, RES_UNMAPPED, RES_DROPPED };

struct res_range {
    uint64_t addr, size;
    uint64_t handle; /* physical memory mapped at addr now (device or host); 0 when unmapped */
    void *host;      /* unmapped spill: the contents, in an arena mapping */
    uint64_t last_access;
    uint64_t gen;
    uint32_t pins;
    uint32_t serving; /* allocations served from it and not yet recorded */
    uint8_t state, device, in_call;
    uint8_t category;    /* own range: its category as of its allocation or latest move */
    uint8_t exposed;     /* its address was seen where the shim cannot follow it: never dropped */
    struct lineage *lin; /* how to recompute it (own ranges only); NULL: no valid one */
    struct backing_chunk *chunk; /* NULL: one allocation's own range */
    struct res_range *next_free;
    struct res_range *succ; /* the range this thread used right after this one, last time */
    uint64_t succ_gen;
};

struct res_pin {
    struct res_range *r;
    uint64_t gen;
};

static pthread_mutex_t res_lock = PTHREAD_MUTEX_INITIALIZER;
static int res_on;
static int res_remat; /* recompute or auto: GEMM outputs may be dropped */
static int res_auto;  /* auto: victims ranked and freed by measured cost */
static uint64_t res_spill_min;
static struct res_range **res_table; /* sorted by addr */
static struct victim_candidate *res_cands;
static size_t res_count, res_cap;
static struct res_range *res_free_list;
static uint64_t res_tick;
static _Atomic uint64_t res_spills, res_restores, res_prefetches, res_spilled_bytes,
    res_restored_bytes, res_drops, res_recomputes, res_dropped_bytes, res_recompute_flops,
    res_access_ooms;
static int res_logged, res_remat_logged;

static MS_TLS struct res_pin res_pins[RES_PINS];
static MS_TLS unsigned res_npins;
static MS_TLS struct res_pin res_last; /* this thread's latest range, for the successor links */

static pthread_key_t res_exit_key;
static int res_exit_key_ok;

/* A thread that ends leaves its pins behind unless they are dropped here. */
static void res_thread_exit(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&res_lock);
    for (unsigned i = 0; i < res_npins; i++)
        if (res_pins[i].r->gen == res_pins[i].gen && res_pins[i].r->pins)
            res_pins[i].r->pins--;
    res_npins = 0;
    pthread_mutex_unlock(&res_lock);
}

void residency_init(void)
{
    uint64_t policy = options_uint(OPT_POLICY);
    res_remat = policy == OPT_POLICY_RECOMPUTE || policy == OPT_POLICY_AUTO;
    res_auto = policy == OPT_POLICY_AUTO;
    res_on = policy == OPT_POLICY_SPILL || res_remat;
    if (res_auto)
        measure_init();
    res_spill_min = options_uint(OPT_SPILL_MIN);
    if (res_on && !res_exit_key_ok)
        res_exit_key_ok = pthread_key_create(&res_exit_key, res_thread_exit) == 0;
}

int residency_enabled(void)
{
    return res_on;
}

static void res_log_once(const char *what, int rc)
{
    if (!res_logged++)
        log_error("spill: %s failed (CUDA error %d); the allocation is reported out of memory",
                  what, rc);
}

static uint64_t round_up(uint64_t v, uint64_t g)
{
    return v > UINT64_MAX - (g - 1) ? 0 : (v + g - 1) & ~(g - 1);
}

static uint64_t chunk_bytes(int device)
{
    uint64_t g = backing_granularity(device);
    uint64_t c = round_up(res_spill_min ? res_spill_min : g, g);
    /* The buddy allocator needs a power-of-two chunk. */
    uint64_t p = g;
    while (p < c && p <= UINT64_MAX / 2)
        p <<= 1;
    return p;
}

/* ---- the table (res_lock held) ---- */

static size_t res_lower(uint64_t addr)
{
    size_t lo = 0, hi = res_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (res_table[mid]->addr < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static struct res_range *res_find(uint64_t addr)
{
    size_t i = res_lower(addr + 1); /* first range starting above addr */
    if (i == 0)
        return NULL;
    struct res_range *r = res_table[i - 1];
    return addr - r->addr < r->size ? r : NULL;
}

static int res_grow(void)
{
    size_t cap = res_cap ? res_cap * 2 : 256;
    struct res_range **t = arena_map(cap * sizeof *t);
    struct victim_candidate *c = arena_map(cap * sizeof *c);
    if (!t || !c) {
        if (t)
            arena_unmap(t, cap * sizeof *t);
        if (c)
            arena_unmap(c, cap * sizeof *c);
        return -1;
    }
    if (res_table) {
        memcpy(t, res_table, res_count * sizeof *t);
        arena_unmap(res_table, res_cap * sizeof *t);
        arena_unmap(res_cands, res_cap * sizeof *c);
    }
    res_table = t;
    res_cands = c;
    res_cap = cap;
    return 0;
}

static struct res_range *res_new(void)
{
    struct res_range *r = res_free_list;
    if (r) {
        res_free_list = r->next_free;
        uint64_t gen = r->gen;
        memset(r, 0, sizeof *r);
        r->gen = gen + 1;
        return r;
    }
    return arena_alloc(sizeof *r);
}

static int res_insert(struct res_range *r)
{
    if (res_count == res_cap && res_grow() < 0)
        return -1;
    size_t i = res_lower(r->addr);
    memmove(&res_table[i + 1], &res_table[i], (res_count - i) * sizeof *res_table);
    res_table[i] = r;
    res_count++;
    return 0;
}

static void res_forget(struct res_range *r)
{
    if (r->lin) {
        lineage_forget(r->lin);
        r->lin = NULL;
    }
}

static void res_remove(struct res_range *r)
{
    res_forget(r);
    size_t i = res_lower(r->addr);
    if (i < res_count && res_table[i] == r) {
        memmove(&res_table[i], &res_table[i + 1], (res_count - i - 1) * sizeof *res_table);
        res_count--;
    }
    r->gen++;
    r->next_free = res_free_list;
    res_free_list = r;
}

/* ---- pins (res_lock held) ---- */

static void res_unpin_thread(void)
{
    for (unsigned i = 0; i < res_npins; i++)
        if (res_pins[i].r->gen == res_pins[i].gen && res_pins[i].r->pins)
            res_pins[i].r->pins--;
    res_npins = 0;
}

static MS_TLS uint8_t res_exit_armed;

static void res_pin(struct res_range *r)
{
    if (!res_exit_armed && res_exit_key_ok) {
        res_exit_armed = 1;
        pthread_setspecific(res_exit_key, &res_exit_armed);
    }
    if (res_npins < RES_PINS) {
        res_pins[res_npins++] = (struct res_pin){r, r->gen};
        r->pins++;
    }
}

/* ---- moves (res_lock held) ---- */

static void res_record_flops(uint8_t event, const struct res_range *r, uint64_t t0, uint64_t flops)
{
    if (!trace_enabled())
        return;
    uint64_t now = clock_now_ns();
    struct mst_rec_residency rec = {.time_ns = t0,
                                    .addr = r->addr,
                                    .bytes = r->size,
                                    .duration_ns = now - t0,
                                    .flops = flops,
                                    .thread = trace_thread_id(),
                                    .event = event,
                                    .device = r->device};
    trace_touch();
    trace_record(MST_REC_RESIDENCY, &rec, sizeof rec, NULL, 0);
}

static void res_record(uint8_t event, const struct res_range *r, uint64_t t0)
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
static void res_device_out(struct res_range *r)
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
static void res_device_in(struct res_range *r)
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
static void res_settle_retag(int device, uint8_t kept, uint8_t now, uint64_t bytes)
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

static int res_spill(struct res_range *r)
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

static int res_make_room_locked(int device, uint64_t need);

enum res_act { RES_ACT_SPILL, RES_ACT_DROP };
static int res_droppable(const struct res_range *r);
static enum res_act res_action(const struct res_range *r, const struct victim_candidate *c);
static int res_drop(struct res_range *r);

/* A failed restore: its bytes are on the host after all. Past the limit only if another
 * spill took the room meanwhile; then the count is short until the range is freed. */
static void res_rehost(uint64_t bytes)
{
    if (budget_reserve(BUDGET_HOST, bytes) < 0)
        log_error("spill: host limit exceeded by %llu bytes after a failed restore",
                  (unsigned long long)bytes);
}

static int res_restore(struct res_range *r, uint8_t event)
{
    uint64_t S = r->size, t0;
    int rc;
    /* A swap: the victims this restore displaces need host room while r still holds its own,
     * so r's host bytes are given back first (the host limit may be exceeded by one range for
     * the duration of the copy). */
    budget_release(BUDGET_HOST, S);
    if (budget_reserve(r->device, S) < 0) {
        if (event == MST_RES_PREFETCH) { /* only into free room, never at another's expense */
            res_rehost(S);
            return -1;
        }
        if (res_make_room_locked(r->device, S) < 0 || budget_reserve(r->device, S) < 0) {
            res_rehost(S);
            return -1;
        }
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
    atomic_fetch_add(event == MST_RES_PREFETCH ? &res_prefetches : &res_restores, 1);
    atomic_fetch_add(&res_restored_bytes, S);
    res_record(event, r, t0);
    return 0;
fail:
    budget_release(r->device, S);
    res_rehost(S);
    res_log_once("restore", rc);
    return -1;
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
        if (by_cost && !c->in_use) {
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
    size_t k = by_cost ? victim_choose_dtr(res_cands, n, deficit, res_tick, &chosen)
                       : victim_choose(res_cands, n, deficit, &chosen);
    if (chosen < deficit)
        return -1;
    /* Indices stay valid: moving changes no range's place in the table. */
    for (size_t i = 0; i < k; i++) {
        struct res_range *r = res_table[res_cands[i].id];
        if ((res_action(r, &res_cands[i]) == RES_ACT_DROP ? res_drop(r) : res_spill(r)) < 0)
            return -1;
    }
    return 0;
}

static int res_make_room_locked(int device, uint64_t need)
{
    /* The costs are measured on device memory the ceiling counts, at the first need: room for
     * the probe first, by recency since nothing costs anything yet. */
    uint64_t probe = res_auto ? measure_room_needed(device) : 0;
    if (probe && res_make_room_as(device, need + probe, 0) == 0)
        measure_device(device, NULL);
    return res_make_room_as(device, need, res_auto);
}

/* ---- recompute (res_lock held) ---- */

static void res_remat_log(const char *what, const struct res_range *r, int rc)
{
    if (!res_remat_logged++)
        log_error("recompute: %s of %#llx failed (%d); the access is reported out of memory", what,
                  (unsigned long long)r->addr, rc);
}

/* Longest chain of dropped ranges below r (its inputs, theirs...): 0 when none is dropped. */
static int res_depth_down(const struct res_range *r, int budget)
{
    int d = 0;
    if (!r->lin || budget <= 0)
        return 0;
    for (unsigned i = 0; i < r->lin->nin; i++) {
        struct res_range *in = res_find(r->lin->in[i]);
        if (in && !in->chunk && in->addr == r->lin->in[i] && in->state == RES_DROPPED) {
            int e = 1 + res_depth_down(in, budget - 1);
            d = e > d ? e : d;
        }
    }
    return d;
}

/* Longest chain of dropped ranges computed from r (directly or through others). */
static int res_depth_up(const struct res_range *r, int budget)
{
    int d = 0;
    if (budget <= 0 || !lineage_may_read(r->addr))
        return 0;
    for (struct lineage *l = lineage_first(); l; l = l->next) {
        if (!lineage_reads(l, r->addr))
            continue;
        struct res_range *y = res_find(l->out);
        if (y && y->state == RES_DROPPED) {
            int e = 1 + res_depth_up(y, budget - 1);
            d = e > d ? e : d;
        }
    }
    return d;
}

/* Whether r may be dropped now: a valid lineage, not exposed, and every chain of dropped
 * ranges through it within LINEAGE_MAX_DEPTH. */
static int res_droppable(const struct res_range *r)
{
    if (!res_remat || r->chunk || !r->lin || r->exposed)
        return 0;
    int depth = 1 + res_depth_down(r, LINEAGE_MAX_DEPTH) + res_depth_up(r, LINEAGE_MAX_DEPTH);
    return depth <= LINEAGE_MAX_DEPTH;
}

/* The one place that decides how a victim's device memory is freed. `recompute`: drop whatever
 * is droppable, spill the rest. `auto`: what the ranking chose by cost (c->action), if the
 * range is still droppable now (an earlier victim's drop may have lengthened its chain). */
static enum res_act res_action(const struct res_range *r, const struct victim_candidate *c)
{
    if (r->chunk) /* no lineage: a chunk is always spilled */
        return RES_ACT_SPILL;
    if (res_auto && c->action != VICTIM_RECOMPUTE)
        return RES_ACT_SPILL;
    return res_droppable(r) ? RES_ACT_DROP : RES_ACT_SPILL;
}

/* Give r's device memory back and keep nothing: its lineage recomputes it. */
static int res_drop(struct res_range *r)
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

#define RES_PROTECT (LINEAGE_MAX_IN + 2)

/* Bring a dropped range back: its inputs resident first (restored, or recomputed one level
 * deeper), then device memory mapped at its address and its GEMM replayed into it. The range
 * and its inputs are marked in_call meanwhile, so making room never takes them. */
static int res_recompute(struct res_range *r, int depth)
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
    struct res_range *prot[RES_PROTECT];
    uint8_t was[RES_PROTECT];
    size_t np = 0;
    uint64_t need[LINEAGE_MAX_IN + 1];
    unsigned nneed = 0;
    for (unsigned i = 0; i < l->nin; i++)
        need[nneed++] = l->in[i];
    if (l->ws_bytes)
        need[nneed++] = l->ws;
    prot[np] = r;
    was[np++] = r->in_call;
    r->in_call = 1;
    for (unsigned i = 0; i < nneed; i++) {
        struct res_range *in = res_find(need[i]);
        /* An input in a chunk brings the chunk; two inputs may share one. */
        int seen = !in;
        for (size_t j = 0; j < np && !seen; j++)
            seen = prot[j] == in;
        if (seen)
            continue;
        prot[np] = in;
        was[np++] = in->in_call;
        in->in_call = 1;
    }
    int result = -1, rc = 0;
    uint64_t S = r->size, h = 0, t0;
    for (size_t i = 1; i < np; i++) {
        if (prot[i]->state == RES_DROPPED    ? res_recompute(prot[i], depth + 1) < 0
            : prot[i]->state != RES_RESIDENT ? res_restore(prot[i], MST_RES_RESTORE) < 0
                                             : 0)
            goto out;
    }
    if (budget_reserve(r->device, S) < 0 &&
        (res_make_room_locked(r->device, S) < 0 || budget_reserve(r->device, S) < 0))
        goto out;
    t0 = clock_now_ns(); /* after making room, like a restore */
    if ((rc = backing_ensure_context(r->device)) != 0 ||
        (rc = backing_map(r->device, 0, r->addr, S, &h)) != 0) {
        budget_release(r->device, S);
        res_remat_log("mapping device memory", r, rc);
        goto out;
    }
    if ((rc = lineage_replay(l)) != 0 || (rc = backing_sync()) != 0) {
        backing_unmap(r->addr, S, h);
        budget_release(r->device, S);
        res_remat_log("replaying its GEMM", r, rc);
        goto out;
    }
    r->handle = h;
    r->state = RES_RESIDENT;
    res_device_in(r);
    atomic_fetch_add(&res_recomputes, 1);
    atomic_fetch_add(&res_recompute_flops, l->flops);
    res_record_flops(MST_RES_RECOMPUTE, r, t0, l->flops);
    result = 0;
out:
    for (size_t i = 0; i < np; i++)
        prot[i]->in_call = was[i];
    return result;
}

/* The allocation at `base` is about to be written (or may be) or freed: every dropped range
 * computed from it is recomputed first, while it still holds what they were computed from, and
 * every lineage reading it is forgotten. -1 when a recompute failed; `force` (a free, which
 * cannot be refused) forgets that lineage anyway and the range's contents are lost. */
static int res_before_write(uint64_t base, int force)
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
        if (y && y->state == RES_DROPPED && res_recompute(y, 1) < 0) {
            result = -1;
            if (!force)
                continue;
        }
        /* A recompute forgets no lineage, so `next` is still live. */
        if (y && y->lin == l)
            y->lin = NULL;
        lineage_forget(l);
    }
    return result;
}

/* ---- the API ---- */

/* The paths the shim serves: plain and stream-ordered allocations. Memory from an explicit
 * pool keeps the pool's properties (export handles, access, release threshold) and managed,
 * pitched and 3D memory their own semantics, so those go to the driver. A served stream-ordered
 * allocation is usable at once, which satisfies its stream order; its free waits for the device
 * like cudaFree (residency_free), stricter than the stream order asks. */
static MS_TLS uint8_t res_pass_next;

void residency_stream_alloc(uint64_t stream)
{
    if (!res_on)
        return;
    CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
    /* A driver without capture cannot be capturing; a failed query is taken as capturing. */
    if (real_driver_ready() && REAL(cuStreamIsCapturing) &&
        (REAL(cuStreamIsCapturing)((CUstream)(uintptr_t)stream, &capture) != CUDA_SUCCESS ||
         capture != CU_STREAM_CAPTURE_STATUS_NONE))
        res_pass_next = 1;
}

static int res_servable(int kind)
{
    return kind == MST_KIND_CUDA_MALLOC || kind == MST_KIND_CU_MEM_ALLOC ||
           kind == MST_KIND_CUDA_MALLOC_ASYNC || kind == MST_KIND_CU_MEM_ALLOC_ASYNC;
}

uint64_t residency_charge(int kind, int device, uint64_t requested)
{
    int pass = res_pass_next;
    res_pass_next = 0;
    if (!res_on || pass || requested == 0 || device < 0 || device >= MS_MAX_DEVICES ||
        !res_servable(kind))
        return 0;
    if (backing_device_init(device) != 0)
        return 0;
    uint64_t g = backing_granularity(device);
    if (requested < res_spill_min) {
        uint64_t c = buddy_class_bytes(requested, chunk_bytes(device));
        if (c)
            return c;
    }
    return round_up(requested, g);
}

static int res_serve_own(int device, uint64_t size, uint8_t category, uint64_t *addr)
{
    uint64_t va = 0, h = 0;
    int rc;
    struct res_range *r = res_new();
    if (!r)
        return -1;
    if ((rc = backing_reserve(size, &va)) != 0 ||
        (rc = backing_map(device, 0, va, size, &h)) != 0) {
        if (va)
            backing_unreserve(va, size);
        res_remove(r);
        res_log_once("mapping device memory", rc);
        return -1;
    }
    r->addr = va;
    r->size = size;
    r->handle = h;
    r->device = (uint8_t)device;
    r->category = category;
    r->state = RES_RESIDENT;
    r->last_access = ++res_tick;
    if (res_insert(r) < 0) {
        backing_unmap(va, size, h);
        backing_unreserve(va, size);
        res_remove(r);
        return -1;
    }
    *addr = va;
    return 0;
}

static int res_serve_small(int device, uint64_t slot, uint8_t category, uint64_t *addr)
{
    for (size_t i = 0; i < res_count; i++) {
        struct res_range *r = res_table[i];
        /* Never into a chunk that is away: the block's bytes would be charged to the device
         * while they are not there (a fresh chunk is made instead). */
        if (r->chunk && r->device == device && r->state == RES_RESIDENT &&
            r->chunk->bytes - r->chunk->used >= slot &&
            (*addr = backing_chunk_take(r->chunk, slot)) != 0) {
            /* The block was part of the chunk's reservation; the ticket now charges it. */
            budget_release(device, slot);
            backing_chunk_set_tag(r->chunk, *addr, category);
            r->last_access = ++res_tick; /* a new allocation ages from now, like an own range */
            return 0;
        }
    }
    uint64_t C = chunk_bytes(device);
    if (budget_reserve(device, C - slot) < 0 &&
        (res_make_room_locked(device, C - slot) < 0 || budget_reserve(device, C - slot) < 0))
        return -1;
    struct backing_chunk *c = arena_map(sizeof *c);
    uint64_t va = 0;
    if (!c || res_serve_own(device, C, MST_CAT_UNKNOWN, &va) < 0) {
        if (c)
            arena_unmap(c, sizeof *c);
        budget_release(device, C - slot);
        return -1;
    }
    struct res_range *r = res_find(va);
    backing_chunk_init(c, va, C);
    r->chunk = c;
    *addr = backing_chunk_take(c, slot);
    backing_chunk_set_tag(c, *addr, category);
    return *addr ? 0 : -1; /* a fresh chunk always has the block: 0 would be a bug */
}

int residency_serve(int device, uint64_t requested, uint64_t charged, uint8_t category,
                    uint64_t *addr)
{
    if (!res_on)
        return -1;
    pthread_mutex_lock(&res_lock);
    res_unpin_thread();
    int r;
    /* Exactly the rule of residency_charge: a block of a chunk, or a range of its own. */
    if (requested < res_spill_min && buddy_class_bytes(requested, chunk_bytes(device)) == charged)
        r = res_serve_small(device, charged, category, addr);
    else
        r = res_serve_own(device, charged, category, addr);
    /* Not pinned: the caller commits the bytes to their category after this returns, and
     * another thread may move the range before that; its category then dips below zero for
     * that moment and the sums come out right (the move takes off the block's bytes, the
     * commit puts them on while away, a restore puts them on again). A pin would stay on a
     * chunk for as long as the allocating thread makes no other call. Until the allocation
     * is recorded (residency_served), though, the range stays: moved before, its move would
     * come first in the trace and the analyzer would count the allocation resident. */
    struct res_range *got = r == 0 ? res_find(*addr) : NULL;
    if (got)
        got->serving++;
    pthread_mutex_unlock(&res_lock);
    return r;
}

void residency_served(uint64_t addr)
{
    pthread_mutex_lock(&res_lock);
    struct res_range *r = res_find(addr);
    if (r && r->serving)
        r->serving--;
    pthread_mutex_unlock(&res_lock);
}

int residency_free(uint64_t addr, uint8_t category, uint64_t charged)
{
    if (!res_on)
        return 0;
    pthread_mutex_lock(&res_lock);
    /* Whatever was computed from it is recomputed while it still exists (the real free of an
     * allocation the shim does not own comes after this). */
    if (res_remat && res_before_write(addr, 1) < 0)
        log_error("recompute: an allocation was freed before what was computed from it could be "
                  "recomputed; that data is lost");
    struct res_range *r = res_find(addr);
    if (!r || (!r->chunk && r->addr != addr)) {
        pthread_mutex_unlock(&res_lock);
        return 0;
    }
    if (r->chunk) {
        int kept = backing_chunk_tag(r->chunk, addr);
        if (backing_chunk_give(r->chunk, addr) != 0) {
            if (r->state == RES_RESIDENT) /* its bytes stay charged, as the reservation */
                budget_uncommit(r->device, category, charged);
            else /* the chunk's host bytes stay charged until its last block goes */
                res_settle_retag(r->device, (uint8_t)kept, category, charged);
        }
        if (r->chunk->used == 0) {
            backing_sync();
            if (r->handle) /* device memory, or host memory mapped in while spilled */
                backing_unmap(r->addr, r->size, r->handle);
            if (r->host)
                arena_unmap(r->host, r->size);
            /* Only once unmapped: another thread could take the bytes meanwhile. */
            budget_release(r->state == RES_RESIDENT ? r->device : BUDGET_HOST, r->size);
            backing_unreserve(r->addr, r->size);
            arena_unmap(r->chunk, sizeof *r->chunk);
            res_remove(r);
        }
        pthread_mutex_unlock(&res_lock);
        return 1;
    }
    /* cudaFree waits for the device: so does unmapping what may still be in use. */
    backing_sync();
    if (r->handle)
        backing_unmap(r->addr, r->size, r->handle);
    if (r->host)
        arena_unmap(r->host, r->size);
    if (r->state == RES_RESIDENT) {
        budget_free(r->device, category, r->size);
    } else {
        res_settle_retag(r->device, r->category, category, r->size);
        if (r->state != RES_DROPPED)
            budget_release(BUDGET_HOST, r->size);
    }
    backing_unreserve(r->addr, r->size);
    res_remove(r);
    pthread_mutex_unlock(&res_lock);
    return 1;
}

int residency_reserve(int device, uint64_t need)
{
    if (!res_on)
        return -1;
    pthread_mutex_lock(&res_lock);
    res_unpin_thread();
    /* Bounded: allocations the shim does not serve race for the same room. */
    int r = -1;
    for (int tries = 0; tries < 8; tries++) {
        if (budget_reserve(device, need) == 0) {
            r = 0;
            break;
        }
        if (res_make_room_locked(device, need) < 0)
            break;
    }
    pthread_mutex_unlock(&res_lock);
    return r;
}

/* A copy, set, launch or GEMM the shim refuses because what it uses could not be brought
 * back: an OOM record and screen like an allocation's, the request being the range's bytes. */
struct res_oom {
    uint64_t bytes;
    int device;
    uint8_t category;
};

/* res_lock held. */
static void res_oom_note(struct res_oom *o, const struct res_range *r)
{
    if (r)
        *o = (struct res_oom){.bytes = r->size, .device = r->device, .category = r->category};
}

static void res_oom_report(const struct res_oom *o)
{
    atomic_fetch_add(&res_access_ooms, 1);
    struct budget_snapshot b;
    budget_snapshot(o->device, &b);
    if (trace_enabled()) {
        struct mst_rec_oom rec = {.time_ns = clock_now_ns(),
                                  .request = o->bytes,
                                  .ceiling = b.ceiling,
                                  .resident = b.resident,
                                  .thread = trace_thread_id(),
                                  .kind = MST_KIND_SHIM_VMM,
                                  .device = (uint8_t)o->device};
        memcpy(rec.by_category, b.by_category, sizeof rec.by_category);
        trace_touch();
        trace_record(MST_REC_OOM, &rec, sizeof rec, NULL, 0);
    }
    struct report_oom r = {.request = o->bytes,
                           .device = o->device,
                           .kind = MST_KIND_SHIM_VMM,
                           .category = o->category,
                           .access = 1};
    report_oom(&r);
}

uint64_t residency_access_ooms(void)
{
    return atomic_load(&res_access_ooms);
}

int residency_prepare(const uint64_t *bases, const uint8_t *modes, size_t n)
{
    if (!res_on || n == 0)
        return 0;
    struct res_range *in_call[RES_IN_CALL];
    size_t m = 0;
    int result = 0;
    pthread_mutex_lock(&res_lock);
    res_unpin_thread();
    for (size_t i = 0; i < n && m < RES_IN_CALL; i++) {
        struct res_range *r = res_find(bases[i]);
        if (!r || r->in_call)
            continue;
        r->in_call = 1;
        r->last_access = ++res_tick;
        in_call[m++] = r;
        if (res_last.r && res_last.r->gen == res_last.gen && res_last.r != r) {
            res_last.r->succ = r;
            res_last.r->succ_gen = r->gen;
        }
        res_last = (struct res_pin){r, r->gen};
    }
    struct res_range *failed = NULL;
    for (size_t i = 0; i < m; i++) {
        if (in_call[i]->state == RES_DROPPED    ? res_recompute(in_call[i], 1) < 0
            : in_call[i]->state != RES_RESIDENT ? res_restore(in_call[i], MST_RES_RESTORE) < 0
                                                : 0) {
            result = -1;
            failed = failed ? failed : in_call[i];
        }
    }
    /* What the call may write: whatever was computed from it is recomputed now, from what it
     * holds before the call, and no lineage reads it or produced it any more. */
    for (size_t i = 0; res_remat && result == 0 && i < n; i++) {
        if (!(modes[i] & (MST_ACCESS_WRITE | MST_ACCESS_MAYBE)))
            continue;
        if (res_before_write(bases[i], 0) < 0) {
            result = -1;
            break;
        }
        struct res_range *r = res_find(bases[i]);
        if (r && !r->chunk && r->addr == bases[i])
            res_forget(r);
    }
    /* Prefetch: the range that followed this one last time (a training step repeats the
     * previous step's order), if it is spilled and fits in free room (never a recompute). */
    struct res_range *next = m ? in_call[m - 1]->succ : NULL;
    if (result == 0 && next && next->gen == in_call[m - 1]->succ_gen && !next->in_call &&
        next->state != RES_RESIDENT && next->state != RES_DROPPED)
        res_restore(next, MST_RES_PREFETCH);
    for (size_t i = 0; i < m; i++) {
        in_call[i]->in_call = 0;
        res_pin(in_call[i]);
    }
    struct res_oom oom = {0};
    if (result < 0)
        res_oom_note(&oom, failed ? failed : m ? in_call[0] : NULL);
    pthread_mutex_unlock(&res_lock);
    if (result < 0)
        res_oom_report(&oom);
    return result;
}

int residency_remat(void)
{
    return res_remat;
}

void residency_gemm_written(const struct lineage_call *call, const uint64_t *in, unsigned nin,
                            uint64_t flops, uint64_t ws, uint64_t ws_bytes)
{
    if (!res_remat || nin > LINEAGE_MAX_IN)
        return;
    pthread_mutex_lock(&res_lock);
    struct res_range *r = res_find(call->c);
    if (!r || r->chunk || r->addr != call->c || r->state != RES_RESIDENT)
        goto out;
    for (unsigned i = 0; i < nin; i++)
        if (in[i] == r->addr)
            goto out;
    res_forget(r);
    struct lineage *l = lineage_new();
    if (!l)
        goto out;
    l->call = *call;
    l->out = r->addr;
    for (unsigned i = 0; i < nin; i++)
        if (!lineage_reads(l, in[i]))
            l->in[l->nin++] = in[i];
    l->ws = ws;
    l->ws_bytes = ws_bytes;
    l->flops = flops;
    lineage_link(l);
    r->lin = l;
out:
    pthread_mutex_unlock(&res_lock);
}

void residency_blas_handle(uint64_t handle)
{
    if (!res_remat)
        return;
    pthread_mutex_lock(&res_lock);
    struct lineage *next;
    for (struct lineage *l = lineage_first(); l; l = next) {
        next = l->next;
        if (l->call.handle != handle)
            continue;
        struct res_range *y = res_find(l->out);
        if (y && y->state == RES_DROPPED && res_recompute(y, 1) < 0)
            log_error("recompute: a cuBLAS handle changed before what it computed could be "
                      "recomputed; that data is lost");
        /* A recompute forgets no lineage, so `next` is still live. */
        if (y && y->lin == l)
            y->lin = NULL;
        lineage_forget(l);
    }
    pthread_mutex_unlock(&res_lock);
}

int residency_forget_lineages(void)
{
    if (!res_remat)
        return 0;
    int result = 0;
    pthread_mutex_lock(&res_lock);
    struct lineage *next;
    for (struct lineage *l = lineage_first(); l; l = next) {
        next = l->next;
        struct res_range *y = res_find(l->out);
        /* A failed recompute keeps its lineage (the range is still dropped and the call is
         * refused), like a write res_before_write could not prepare. */
        if (y && y->state == RES_DROPPED && res_recompute(y, 1) < 0) {
            result = -1;
            continue;
        }
        /* A recompute forgets no lineage, so `next` is still live. */
        if (y && y->lin == l)
            y->lin = NULL;
        lineage_forget(l);
    }
    pthread_mutex_unlock(&res_lock);
    return result;
}

/* res_lock held. The range's address is out of the shim's sight from now on. */
static void res_expose_one(uint64_t addr)
{
    struct res_range *r = res_find(addr);
    if (!r || r->chunk || r->exposed)
        return;
    r->exposed = 1;
    if (r->state == RES_DROPPED && res_recompute(r, 1) < 0)
        log_error("recompute: %#llx was exposed while dropped and could not be recomputed",
                  (unsigned long long)r->addr);
}

void residency_expose(const uint64_t *addrs, size_t n)
{
    if (!res_remat || n == 0)
        return;
    pthread_mutex_lock(&res_lock);
    for (size_t i = 0; i < n; i++)
        res_expose_one(addrs[i]);
    pthread_mutex_unlock(&res_lock);
}

void residency_scan_host(const void *src, uint64_t bytes)
{
    if (!res_remat || !src || bytes < sizeof(uint64_t))
        return;
    if (bytes > RES_SCAN_MAX)
        bytes = RES_SCAN_MAX;
    const unsigned char *p = src, *end = p + bytes;
    p += (sizeof(uint64_t) - (uintptr_t)p % sizeof(uint64_t)) % sizeof(uint64_t);
    pthread_mutex_lock(&res_lock);
    if (res_count) {
        uint64_t lo = res_table[0]->addr;
        uint64_t hi = res_table[res_count - 1]->addr + res_table[res_count - 1]->size;
        for (; p + sizeof(uint64_t) <= end; p += sizeof(uint64_t)) {
            uint64_t v;
            memcpy(&v, p, sizeof v);
            if (v >= lo && v < hi)
                res_expose_one(v);
        }
    }
    pthread_mutex_unlock(&res_lock);
}

int residency_lookup(uint64_t addr, uint64_t *base, uint64_t *size, int *device)
{
    if (!res_on)
        return 0;
    pthread_mutex_lock(&res_lock);
    struct res_range *r = res_find(addr);
    if (r) {
        *base = r->addr;
        *size = r->size;
        *device = r->device;
    }
    pthread_mutex_unlock(&res_lock);
    return r != NULL;
}

void residency_summary(struct mst_rec_summary *s)
{
    s->spills = atomic_load(&res_spills);
    s->restores = atomic_load(&res_restores);
    s->prefetches = atomic_load(&res_prefetches);
    s->spilled_bytes = atomic_load(&res_spilled_bytes);
    s->restored_bytes = atomic_load(&res_restored_bytes);
    s->drops = atomic_load(&res_drops);
    s->recomputes = atomic_load(&res_recomputes);
    s->dropped_bytes = atomic_load(&res_dropped_bytes);
    s->recompute_flops = atomic_load(&res_recompute_flops);
}

void residency_atfork_prepare(void)
{
    pthread_mutex_lock(&res_lock);
}

void residency_atfork_parent(void)
{
    pthread_mutex_unlock(&res_lock);
}

void residency_atfork_child(void)
{
    /* The parent's ranges are not the child's (its registry and budget start empty too): they
     * are forgotten, not unmapped. The table was consistent: the lock was held across fork. */
    res_count = 0;
    res_npins = 0;
    res_last = (struct res_pin){NULL, 0};
    atomic_store(&res_spills, 0);
    atomic_store(&res_restores, 0);
    atomic_store(&res_prefetches, 0);
    atomic_store(&res_spilled_bytes, 0);
    atomic_store(&res_restored_bytes, 0);
    atomic_store(&res_drops, 0);
    atomic_store(&res_recomputes, 0);
    atomic_store(&res_dropped_bytes, 0);
    atomic_store(&res_recompute_flops, 0);
    atomic_store(&res_access_ooms, 0);
    pthread_mutex_init(&res_lock, NULL);
}
