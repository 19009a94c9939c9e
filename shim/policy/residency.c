/* residency: see residency.h. This file holds the state, the allocation paths and the API; the
 * table of ranges, the moves and recompute are its parts (residency_range.h). */
#include "residency.h"
#include "residency_range.h"

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

/* Bytes of a host-to-device copy's source read for device addresses (pointer arrays are
 * small; a bulk upload past this is data). */
#define RES_SCAN_MAX (64u << 10)

pthread_mutex_t res_lock = PTHREAD_MUTEX_INITIALIZER;
static int res_on;
int res_remat; /* recompute or auto: GEMM outputs may be dropped */
int res_auto;  /* auto: victims ranked and freed by measured cost */
static uint64_t res_spill_min;
struct res_range **res_table; /* sorted by addr */
struct victim_candidate *res_cands;
size_t res_count, res_cap;
struct res_range *res_free_list;
uint64_t res_tick;
uint64_t res_op_peak;
struct nextuse res_nu;
static const struct nextuse_mem res_nu_mem = {arena_map, arena_unmap};
_Atomic uint64_t res_spills, res_restores, res_spilled_bytes, res_restored_bytes, res_drops,
    res_recomputes, res_dropped_bytes, res_recompute_flops, res_access_ooms, res_host_uses,
    res_host_use_bytes;
static int res_host_use = 1; /* MEMSHIM_HOST_USE */
static int res_logged;
int res_remat_logged;

MS_TLS struct res_pin res_pins[RES_PINS];
MS_TLS unsigned res_npins;

pthread_key_t res_exit_key;
int res_exit_key_ok;

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
    res_host_use = options_uint(OPT_HOST_USE) == OPT_ON;
    nextuse_init(&res_nu, &res_nu_mem);
    if (res_on && !res_exit_key_ok)
        res_exit_key_ok = pthread_key_create(&res_exit_key, res_thread_exit) == 0;
}

int residency_enabled(void)
{
    return res_on;
}

void res_log_once(const char *what, int rc)
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
    r->nu_key = nextuse_born(&res_nu, size, &r->nu_pred);
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
        res_block_forget(r, addr); /* dropped or not, its contents go with it */
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
            nextuse_end(&res_nu, r->nu_key);
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
    nextuse_end(&res_nu, r->nu_key);
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

uint64_t residency_host_uses(uint64_t *bytes)
{
    *bytes = atomic_load(&res_host_use_bytes);
    return atomic_load(&res_host_uses);
}

void residency_step(void)
{
    if (!res_on)
        return;
    pthread_mutex_lock(&res_lock);
    nextuse_step(&res_nu);
    pthread_mutex_unlock(&res_lock);
}

int res_host_usable(int device)
{
    return res_host_use && backing_host_vmm(device);
}

void res_host_used(const struct res_range *r)
{
    if (atomic_fetch_add(&res_host_uses, 1) == 0)
        log_error("spill: an operation's ranges do not all fit under the ceiling on device %d; "
                  "those without room are used in host memory, over the bus "
                  "(MEMSHIM_HOST_USE=off fails the operation instead)",
                  r->device);
    atomic_fetch_add(&res_host_use_bytes, r->size);
}

/* A range the device has no room for, used where it is: its host memory is mapped at its
 * address, so the call reads and writes it over the bus. Only when the device has no room:
 * making room failed, so the call's other ranges already fill what the ceiling allows. */
static int res_use_on_host(struct res_range *r)
{
    if (!res_host_usable(r->device) || r->state != RES_HOST_MAPPED || r->ndropped)
        return 0;
    res_host_used(r);
    res_record(MST_RES_HOST_USE, r, clock_now_ns());
    return 1;
}

int res_make_usable(struct res_range *r, int depth)
{
    if (r->state == RES_DROPPED)
        return res_recompute(r, depth);
    if (r->state != RES_RESIDENT && res_restore(r) < 0 && !res_use_on_host(r))
        return -1;
    return 0;
}

int residency_prepare(const uint64_t *bases, const uint8_t *modes, size_t n)
{
    if (!res_on || n == 0)
        return 0;
    struct res_range *in_call[RES_PINS];
    size_t m = 0;
    uint64_t op_bytes = 0;
    int result = 0;
    pthread_mutex_lock(&res_lock);
    res_unpin_thread();
    for (size_t i = 0; i < n && m < RES_PINS; i++) {
        struct res_range *r = res_find(bases[i]);
        if (!r || r->in_call)
            continue;
        r->in_call = 1;
        op_bytes += r->size;
        r->last_access = ++res_tick;
        nextuse_touch(&res_nu, r->nu_key);
        in_call[m++] = r;
    }
    if (op_bytes > res_op_peak)
        res_op_peak = op_bytes;
    struct res_range *failed = NULL;
    for (size_t i = 0; i < m; i++) {
        if (res_make_usable(in_call[i], 1) < 0) {
            result = -1;
            failed = failed ? failed : in_call[i];
        }
    }
    /* A GEMM output dropped with its chunk is replayed when used (its chunk is back by now). */
    for (size_t i = 0; res_remat && result == 0 && i < n; i++) {
        struct res_range *r = res_find(bases[i]);
        struct lineage *l = r && r->chunk && r->ndropped ? res_lin_of(bases[i]) : NULL;
        if (l && l->dropped && res_block_replay(r, l, 1) < 0) {
            result = -1;
            failed = failed ? failed : r;
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
        else if (r && r->chunk)
            res_block_forget(r, bases[i]);
    }
    /* A refused call does not run: nothing of it needs to stay where it is. */
    for (size_t i = 0; i < m; i++) {
        in_call[i]->in_call = 0;
        if (result == 0)
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

void residency_call_done(void)
{
    /* Thread-local test first: most calls pin nothing (the shim serves no range they use). */
    if (!res_on || res_npins == 0)
        return;
    pthread_mutex_lock(&res_lock);
    res_unpin_thread();
    pthread_mutex_unlock(&res_lock);
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
    /* The whole of an own range, or of a block of a chunk (dropped with the chunk). */
    if (!r || r->state != RES_RESIDENT ||
        (r->chunk ? backing_chunk_tag(r->chunk, call->c) < 0 : r->addr != call->c))
        goto out;
    for (unsigned i = 0; i < nin; i++)
        if (in[i] == call->c)
            goto out;
    if (r->chunk)
        res_block_forget(r, call->c);
    else
        res_forget(r);
    struct lineage *l = lineage_new();
    if (!l)
        goto out;
    l->call = *call;
    l->out = call->c;
    for (unsigned i = 0; i < nin; i++)
        if (!lineage_reads(l, in[i]))
            l->in[l->nin++] = in[i];
    l->ws = ws;
    l->ws_bytes = ws_bytes;
    l->flops = flops;
    lineage_link(l);
    if (!r->chunk)
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
        if (res_out_dropped(l) && res_bring_back(l, 1) < 0)
            log_error("recompute: a cuBLAS handle changed before what it computed could be "
                      "recomputed; that data is lost");
        if (y && y->chunk && l->dropped) {
            l->dropped = 0;
            y->ndropped--;
        }
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
        if (res_out_dropped(l) && res_bring_back(l, 1) < 0) {
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
    if (!r || r->exposed)
        return;
    r->exposed = 1; /* a chunk: none of its blocks is dropped from now on */
    if (r->chunk ? r->ndropped && res_restore(r) < 0
                 : r->state == RES_DROPPED && res_recompute(r, 1) < 0)
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
    res_op_peak = 0;
    nextuse_init(&res_nu, &res_nu_mem); /* the parent's logs stay mapped, unused */
    atomic_store(&res_spills, 0);
    atomic_store(&res_restores, 0);
    atomic_store(&res_spilled_bytes, 0);
    atomic_store(&res_restored_bytes, 0);
    atomic_store(&res_drops, 0);
    atomic_store(&res_recomputes, 0);
    atomic_store(&res_dropped_bytes, 0);
    atomic_store(&res_recompute_flops, 0);
    atomic_store(&res_access_ooms, 0);
    atomic_store(&res_host_uses, 0);
    atomic_store(&res_host_use_bytes, 0);
    pthread_mutex_init(&res_lock, NULL);
}
