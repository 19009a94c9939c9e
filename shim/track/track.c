/* track: the implementation of track.h over the core modules. Every entry point first checks
 * the lifecycle state: before init and after an internal failure the shim is pass-through;
 * after exit the budget still works but the trace is closed. */
#include "track.h"

#include "access.h"
#include "budget.h"
#include "callsite.h"
#include "classify.h"
#include "clock.h"
#include "compat.h"
#include "forksafe.h"
#include "handle_maps.h"
#include "log.h"
#include "options.h"
#include "pystack.h"
#include "registry.h"
#include "report.h"
#include "residency.h"
#include "rules.h"
#include "signal_chain.h"
#include "strtab.h"
#include "trace.h"

#include <ctype.h>
#include <fnmatch.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TRACK_MAX_TAGS   32
#define TRACK_MAX_PHASES 64
/* Frames of the shim above the caller when linked statically: callsite_capture and
 * track_alloc_begin (both noinline). */
#define TRACK_STATIC_SKIP 2

/* DISABLED: pass-through, while track_init runs (hooks may be called from its own CUDA
 * probing) and for good if it cannot complete. */
enum track_state { TRACK_UNINIT, TRACK_ACTIVE, TRACK_DONE, TRACK_DISABLED };

#define TRACK_PENDING_FREES 8

/* A free whose bytes leave the budget once the real free has returned; bytes 0: none (a free of
 * nothing has nothing to release). */
struct track_pending {
    int slot;
    uint8_t category;
    uint64_t bytes;
};

/* A hook releases one allocation, nearly always: that one waits in `first`, where leaving the
 * guard finds it with one test; the frees of an unmap that ends several mappings queue up in
 * `more`. */
struct track_tls {
    struct track_pending first;
    uint8_t nmore;
    struct track_pending more[TRACK_PENDING_FREES - 1];
    /* Whether any of the three has a say in a new allocation, in one load: `says`. */
    union {
        struct {
            uint8_t ntags;
            uint8_t in_pool;  /* inside a framework allocator's allocate (track_tensor_begin) */
            uint16_t nphases; /* may exceed TRACK_MAX_PHASES: deeper ones are counted, not kept */
        };
        uint32_t says;
    };
    uint8_t tags[TRACK_MAX_TAGS];
    const struct strtab_entry *phases[TRACK_MAX_PHASES];
    uint32_t phase_id; /* track_phase_settle's */
};

static MS_TLS struct track_tls track_tls;
static _Atomic int track_state = TRACK_UNINIT;
static _Atomic unsigned char track_known[MS_MAX_DEVICES];
static uint32_t track_rank = MST_NO_RANK;
/* Call sites are captured or the residency policy is on: every allocation takes
 * track_alloc_begin_full. Both are settled by track_init (track_settle_paths). */
static int track_full_always;
/* Allocations and frees are the registry's inserts and removals (registry_totals): counted
 * under its lock, not by two more atomics per pair here. */
static _Atomic uint64_t track_failed, track_ceiling_ooms;
static _Atomic uint64_t track_step_count;
static _Atomic uint64_t track_last_step = UINT64_MAX;
static int track_registry_full_logged;

/* What the probe of each device found, for a fork child's trace. */
struct track_device {
    char name[256];
    uint64_t total;
    int cc_major, cc_minor;
};
static struct track_device track_devices[MS_MAX_DEVICES];
static void track_rewrite_devices(void);

static inline int track_active(void)
{
    int s = atomic_load_explicit(&track_state, memory_order_relaxed);
    return s == TRACK_ACTIVE || s == TRACK_DONE;
}

static inline int track_slot(const struct track_ticket *t)
{
    return (t->flags & MST_ALLOC_F_HOST) ? BUDGET_HOST : t->device;
}

/* The id of the innermost phase, 0 when none is kept: worked out when the phases change, read by
 * every ALLOC record. */
static void track_phase_settle(void)
{
    uint16_t n = track_tls.nphases;
    if (n == 0 || n > TRACK_MAX_PHASES || !track_tls.phases[n - 1])
        track_tls.phase_id = 0;
    else
        track_tls.phase_id = track_tls.phases[n - 1]->id;
}

static inline uint32_t track_phase_id(void)
{
    return track_tls.phase_id;
}

/* ---- signals, exit, fork ---- */

static void track_install_signals(void)
{
    signal_chain_install();
}

static void track_totals(struct report_totals *t)
{
    uint64_t in, out;
    t->allocations = t->frees = 0;
    for (enum registry_ns ns = REGISTRY_ADDR; ns <= REGISTRY_HANDLE; ns++) {
        registry_totals(ns, &in, &out);
        t->allocations += in;
        t->frees += out;
    }
    t->failed = atomic_load(&track_failed);
    t->ooms_at_ceiling = atomic_load(&track_ceiling_ooms);
    t->access_ooms = residency_access_ooms();
    t->host_uses = residency_host_uses(&t->host_use_bytes);
    t->events_lost = trace_events_lost();
    t->unused_rules = classify_unused(NULL);
}

static void track_unused_rule(const char *file, const struct rule *r)
{
    static const char *const targets[] = {"", "symbol:", "module:", "phase:"};
    log_error("%s:%u: the rule `%s %s%s` matched no allocation in this run", file, r->line,
              rules_category_name(r->category), targets[r->target & 3], r->pattern);
}

static int track_used_cuda(const struct report_totals *t)
{
    for (int d = 0; d < MS_MAX_DEVICES; d++)
        if (atomic_load(&track_known[d]))
            return 1;
    return t->allocations || t->failed;
}

static const char *track_report_dest(void)
{
    const char *dest = options_str(OPT_REPORT);
    if (strcmp(dest, "stderr") != 0 && strcmp(dest, options_str(OPT_TRACE)) == 0) {
        log_error("MEMSHIM_REPORT and MEMSHIM_TRACE name the same file (%.200s); the summary goes "
                  "to stderr",
                  dest);
        return "stderr";
    }
    return dest;
}

static void track_exit(void)
{
    int expect = TRACK_ACTIVE;
    if (!atomic_compare_exchange_strong(&track_state, &expect, TRACK_DONE))
        return;
    struct report_totals t;
    track_totals(&t);
    struct mst_rec_summary s = {.time_ns = clock_now_ns(),
                                .allocations = t.allocations,
                                .frees = t.frees,
                                .failed_allocations = t.failed,
                                .events_lost = t.events_lost};
    for (int d = 0; d < MS_MAX_DEVICES; d++) {
        struct budget_snapshot b;
        budget_snapshot(d, &b);
        s.peak_resident = b.peak > s.peak_resident ? b.peak : s.peak_resident;
        s.resident_at_exit += b.resident;
    }
    residency_summary(&s);
    classify_unused(track_unused_rule);
    trace_finish(&s);
    /* A wrapper (a shell script, a launcher) that never used CUDA says nothing and leaves its
     * workers' report alone. */
    if (options_str(OPT_REPORT)[0] && track_used_cuda(&t))
        report_exit(track_report_dest(), track_rank, &t);
}

static void track_atfork_child(void)
{
    trace_atfork_child();
    callsite_reset();
    strtab_reset();
    access_atfork_child();
    registry_reset();
    handle_maps_reset();
    budget_clear_usage(); /* the parent's allocations are not the child's */
    atomic_store(&track_failed, 0);
    atomic_store(&track_ceiling_ooms, 0);
    /* Phases still open on the forking thread get ids in the child's new trace. */
    for (uint16_t i = 0; i < track_tls.nphases && i < TRACK_MAX_PHASES; i++) {
        const struct strtab_entry *e = track_tls.phases[i];
        const struct strtab_entry *n = e ? strtab_intern(e->str, e->len) : NULL;
        if (n)
            track_tls.phases[i] = n;
    }
    track_phase_settle();
    if (trace_enabled())
        track_rewrite_devices();
}

/* ---- init ---- */

static uint32_t track_read_rank(void)
{
    /* Global ranks first: under torchrun inside a Slurm allocation SLURM_PROCID is the
     * launcher's and every worker has it; LOCAL_RANK repeats on every node. */
    static const char *const vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID",
                                       "LOCAL_RANK"};
    for (size_t i = 0; i < MS_ARRAY_LEN(vars); i++) {
        const char *v = getenv(vars[i]);
        uint64_t r;
        if (v && options_parse_uint(v, 0, MST_NO_RANK - 1, &r) == 0)
            return (uint32_t)r;
    }
    return MST_NO_RANK;
}

static void track_set_ceilings(void)
{
    for (int d = 0; d < MS_MAX_DEVICES; d++) {
        if (!options_limit_is_percent(d))
            budget_set_ceiling(d, options_limit(d, 0));
    }
    struct opt_size host = options_size(OPT_HOST_LIMIT);
    uint64_t phys = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
    budget_set_ceiling(BUDGET_HOST, host.ppm
                                        ? (uint64_t)((unsigned __int128)phys * host.ppm / 1000000u)
                                        : host.bytes);
}

/* Call sites serve the trace, the exit report and the out-of-memory screen under a ceiling
 * (and the categories that rules give by call site, which only those show): without any of
 * them, unwinding every allocation's stack is work that nothing reads. A driver's refusal
 * without a ceiling then names no call site. */
static unsigned track_stack_depth(void)
{
    unsigned depth = (unsigned)options_uint(OPT_STACK_DEPTH);
    if (options_str(OPT_TRACE)[0] || options_str(OPT_REPORT)[0] ||
        options_uint(OPT_POLICY) != OPT_POLICY_FAIL)
        return depth;
    for (int d = 0; d < MS_MAX_DEVICES; d++)
        if (options_limit_is_percent(d) || options_limit(d, 0))
            return depth;
    return 0;
}

void track_settle_paths(void)
{
    track_full_always = callsite_depth() || residency_enabled();
}

void track_init(void)
{
    int expect = TRACK_UNINIT;
    if (!atomic_compare_exchange_strong(&track_state, &expect, TRACK_DISABLED))
        return;
    clock_init();
    options_load();
    log_set_level((enum log_level)options_uint(OPT_LOG));
    access_init();
    track_rank = track_read_rank();
    unsigned depth = track_stack_depth();
    pystack_init((int)options_uint(OPT_PY_STACKS));
    callsite_init(depth, TRACK_STATIC_SKIP);
    classify_init(options_str(OPT_RULES));
    struct trace_config cfg = {
        .path_template = options_str(OPT_TRACE),
        .rank = track_rank,
        .stack_depth = depth,
        .flush_ms = (uint32_t)options_uint(OPT_FLUSH_MS),
        .flags = (depth ? MST_FILE_F_STACKS : 0) |
                 (access_level() != ACCESS_OFF ? MST_FILE_F_ACCESSES : 0),
        .label = options_str(OPT_LABEL),
    };
    trace_init(&cfg);
    track_set_ceilings();
    residency_init();
    track_settle_paths();
    if (trace_enabled())
        track_install_signals();
    atexit(track_exit);
    forksafe_init();
    pthread_atfork(NULL, NULL, track_atfork_child);
    atomic_store(&track_state, TRACK_ACTIVE);
    log_debug("ready (trace %s, stack depth %u)", trace_enabled() ? cfg.path_template : "off",
              depth);
}

/* ---- devices ---- */

static void track_write_device(int ordinal, const char *name, uint64_t total, int major, int minor)
{
    struct mst_rec_device d = {.ordinal = (uint32_t)ordinal,
                               .cc_major = (uint32_t)major,
                               .cc_minor = (uint32_t)minor,
                               .total_bytes = total,
                               .ceiling_bytes = budget_ceiling(ordinal)};
    trace_record(MST_REC_DEVICE, &d, sizeof d, name, name ? strlen(name) : 0);
    if (d.ceiling_bytes) {
        struct mst_rec_ceiling c = {.time_ns = clock_now_ns(),
                                    .ceiling_bytes = d.ceiling_bytes,
                                    .device = (uint8_t)ordinal,
                                    .policy = (uint8_t)options_uint(OPT_POLICY)};
        trace_record(MST_REC_CEILING, &c, sizeof c, NULL, 0);
    }
}

void track_device_info(int ordinal, const char *name, uint64_t total_bytes, int cc_major,
                       int cc_minor)
{
    if (!track_active() || ordinal < 0 || ordinal >= MS_MAX_DEVICES ||
        atomic_exchange(&track_known[ordinal], 1))
        return;
    budget_set_physical(ordinal, total_bytes);
    if (options_limit_is_percent(ordinal))
        budget_set_ceiling(ordinal, options_limit(ordinal, total_bytes));
    struct track_device *d = &track_devices[ordinal];
    snprintf(d->name, sizeof d->name, "%s", name ? name : "");
    d->total = total_bytes;
    d->cc_major = cc_major;
    d->cc_minor = cc_minor;
    trace_touch();
    track_write_device(ordinal, name, total_bytes, cc_major, cc_minor);
}

/* A fork child's trace stands on its own: the devices the parent learnt (the child will not
 * probe them again) are its first records, written when its file is created. */
static void track_rewrite_devices(void)
{
    for (int d = 0; d < MS_MAX_DEVICES; d++) {
        const struct track_device *k = &track_devices[d];
        if (atomic_load(&track_known[d]))
            track_write_device(d, k->name[0] ? k->name : NULL, k->total, k->cc_major, k->cc_minor);
    }
}

MS_HOT int track_device_known(int ordinal)
{
    if (ordinal < 0 || ordinal >= MS_MAX_DEVICES)
        return 1; /* nothing to learn about ordinals we keep no state for */
    return atomic_load_explicit(&track_known[ordinal], memory_order_relaxed);
}

/* ---- allocations ---- */

/* The innermost open phase a rule names (CLASSIFY_FROM_USER set when the user's), or -1. */
static int track_phase_category(void)
{
    for (int i =
             (int)(track_tls.nphases > TRACK_MAX_PHASES ? TRACK_MAX_PHASES : track_tls.nphases) - 1;
         i >= 0; i--) {
        int c = track_tls.phases[i] ? strtab_phase_category(track_tls.phases[i]) : -1;
        if (c >= 0)
            return c;
    }
    return -1;
}

/* The user's rules beat the built-in ones; among each, a phase beats a call site. A built-in
 * phase rule alone is marked, so the analyzer may overrule that guess by lifetime. 1 when the
 * program said so (app API tags, or a user's rule for an open phase or for the call site). */
static MS_HOT int track_classify(struct track_ticket *t)
{
    if (track_tls.ntags) {
        uint8_t n = track_tls.ntags;
        t->category = track_tls.tags[(n > TRACK_MAX_TAGS ? TRACK_MAX_TAGS : n) - 1];
        t->flags |= MST_ALLOC_F_CAT_TAGGED;
        return 1;
    }
    int p = track_tls.nphases ? track_phase_category() : -1;
    if (p >= 0 && (p & CLASSIFY_FROM_USER)) {
        t->category = (uint8_t)p;
        t->flags |= MST_ALLOC_F_CAT_TAGGED;
        return 1;
    }
    int c = callsite_category(t->site);
    if (c >= 0 && ((c & CLASSIFY_FROM_USER) || p < 0)) {
        t->category = (uint8_t)c;
        t->flags |= MST_ALLOC_F_CAT_RULE;
        return (c & CLASSIFY_FROM_USER) != 0;
    }
    if (p >= 0) {
        t->category = (uint8_t)p;
        t->flags |= MST_ALLOC_F_CAT_TAGGED | MST_ALLOC_F_CAT_PHASE;
    }
    return 0;
}

static MS_COLD void track_oom(const struct track_ticket *t, int at_ceiling)
{
    atomic_fetch_add(&track_failed, 1);
    struct budget_snapshot b;
    budget_snapshot(track_slot(t), &b);
    struct mst_rec_oom rec = {.time_ns = clock_now_ns(),
                              .request = t->bytes, /* as charged: comparable to ceiling */
                              .ceiling = b.ceiling,
                              .resident = b.resident,
                              .thread = trace_thread_id(),
                              .site = t->site,
                              .phase = track_phase_id(),
                              .kind = t->kind,
                              .device = t->device};
    memcpy(rec.by_category, b.by_category, sizeof rec.by_category);
    trace_touch();
    trace_record(MST_REC_OOM, &rec, sizeof rec, NULL, 0);
    if (at_ceiling)
        atomic_fetch_add(&track_ceiling_ooms, 1);
    uint16_t np = track_tls.nphases;
    struct report_oom r = {.request = t->bytes,
                           .device = track_slot(t),
                           .kind = t->kind,
                           .category = t->category,
                           .site = t->site,
                           .phase = NULL,
                           .by_driver = !at_ceiling};
    if (np && np <= TRACK_MAX_PHASES && track_tls.phases[np - 1])
        r.phase = track_tls.phases[np - 1]->str;
    report_oom(&r);
}

/* The ticket's bytes against the ceiling; under spill, past it, room is made by moving others
 * to the host. */
static inline int track_reserve(struct track_ticket *t, uint64_t bytes, int spill)
{
    int r = budget_reserve(track_slot(t), bytes);
    if (r < 0 && spill)
        r = residency_reserve(t->device, bytes);
    if (r < 0) {
        track_oom(t, 1);
        return -1;
    }
    t->reserved = 1;
    return 0;
}

/* track_alloc_begin when a call site, a tag, a phase, a framework allocator or the spill
 * policy has a say. The site is captured by the caller: TRACK_STATIC_SKIP counts its frame. */
static MS_NOINLINE int track_alloc_begin_full(struct track_ticket *t, int device,
                                              enum mst_alloc_kind kind, uint64_t bytes,
                                              uint64_t requested, uint32_t site)
{
    if (track_tls.in_pool)
        t->flags |= MST_ALLOC_F_POOL;
    t->site = site;
    if (track_tls.ntags | track_tls.nphases | t->site) /* else no rule can apply */
        track_classify(t);
    int spill = residency_enabled() && !(t->flags & MST_ALLOC_F_HOST);
    uint64_t served = spill ? residency_charge(kind, device, requested) : 0;
    if (served) {
        t->bytes = bytes = served;
        t->served = 1;
    }
    return track_reserve(t, bytes, spill);
}

MS_NOINLINE int track_alloc_begin(struct track_ticket *t, int device, enum mst_alloc_kind kind,
                                  uint64_t bytes, uint64_t requested)
{
    *t = (struct track_ticket){.bytes = bytes,
                               .requested = requested,
                               .kind = (uint8_t)kind,
                               /* 255: beyond the devices with a budget, never charged */
                               .device = (uint8_t)(device < 0     ? 0
                                                   : device > 254 ? 255
                                                                  : device),
                               .flags = device < 0 ? MST_ALLOC_F_HOST : 0};
    if (!track_active())
        return 0;
    if (track_tls.says | track_full_always)
        return track_alloc_begin_full(t, device, kind, bytes, requested,
                                      callsite_depth() ? callsite_capture() : 0);
    return track_reserve(t, bytes, 0); /* no site, no rule, no spill: only the ceiling to ask */
}

/* The ALLOC of ticket t at addr, in the short form; `unrequested` below 2^32. */
static inline struct mst_rec_alloc_short track_alloc_record(const struct track_ticket *t,
                                                            uint64_t addr, uint32_t thread,
                                                            uint64_t unrequested)
{
    return (struct mst_rec_alloc_short){.time_ns = clock_now_ns(),
                                        .addr = addr,
                                        .size = t->bytes,
                                        .unrequested = (uint32_t)unrequested,
                                        .thread = thread,
                                        .site = t->site,
                                        .phase = track_phase_id(),
                                        .kind = t->kind,
                                        .category = t->category,
                                        .device = t->device,
                                        .flags = t->flags};
}

/* An allocation on a stream, or that asked for more than it is charged (host memory) or for
 * 4 GiB less: the long ALLOC, which carries the stream and the requested bytes whole. */
static MS_NOINLINE void track_write_alloc_long(const struct track_ticket *t, uint64_t addr,
                                               uint64_t stream)
{
    uint32_t thread = trace_thread_id(); /* see track_write_alloc */
    struct trace_slot slot;
    void *p = trace_reserve(MST_REC_ALLOC, sizeof(struct mst_rec_alloc), &slot);
    if (!p)
        return;
    struct mst_rec_alloc_short in_short = track_alloc_record(t, addr, thread, 0);
    struct mst_rec_alloc rec = mst_alloc_from_short(&in_short);
    rec.requested = t->requested;
    rec.stream = stream;
    memcpy(p, &rec, sizeof rec);
    trace_commit(&slot);
}

/* The usual allocation, synchronous and charged what it asked for rounded up, takes the short
 * ALLOC. */
static void track_write_alloc(const struct track_ticket *t, uint64_t addr, uint64_t stream)
{
    if (!trace_enabled())
        return;
    trace_touch();
    const uint64_t unrequested = t->bytes - t->requested;
    if (!mst_alloc_fits_short(stream, unrequested)) {
        track_write_alloc_long(t, addr, stream);
        return;
    }
    /* Built in the reserved space (constant-size copy: plain stores). The thread id first: a
     * thread's first record may log its THREAD record, which must not nest in a reservation. */
    uint32_t thread = trace_thread_id();
    struct trace_slot slot;
    void *p = trace_reserve(MST_REC_ALLOC, sizeof(struct mst_rec_alloc_short), &slot);
    if (!p)
        return;
    struct mst_rec_alloc_short rec = track_alloc_record(t, addr, thread, unrequested);
    memcpy(p, &rec, sizeof rec);
    trace_commit(&slot);
}

static int track_entry_slot(const struct registry_entry *e)
{
    return (e->flags & MST_ALLOC_F_HOST) ? BUDGET_HOST : e->device;
}

void track_alloc_end(struct track_ticket *t, int ok, int oom, uint64_t addr, uint64_t stream)
{
    if (!t->reserved)
        return;
    int slot = track_slot(t);
    if (!ok) {
        budget_release(slot, t->bytes);
        if (oom)
            track_oom(t, 0);
        return;
    }
    if (t->kind == MST_KIND_CU_MEM_CREATE)
        t->flags |= MST_ALLOC_F_HANDLE;
    t->addr = addr;
    struct registry_entry old;
    int r = registry_insert(t->kind == MST_KIND_CU_MEM_CREATE ? REGISTRY_HANDLE : REGISTRY_ADDR,
                            &t->entry, &old);
    if (r < 0) {
        budget_release(slot, t->bytes);
        if (!track_registry_full_logged++)
            log_error("out of memory for the allocation registry; new allocations are not "
                      "counted");
        return;
    }
    if (r == 1) { /* a free we never saw: the old allocation is gone */
        budget_free(track_entry_slot(&old), old.category, old.size);
    }
    budget_commit(slot, t->category, t->bytes);
    track_write_alloc(t, addr, stream);
}

int track_alloc_serve(struct track_ticket *t, uint64_t *addr, uint64_t stream)
{
    if (!t->served || !t->reserved)
        return 0;
    uint64_t a = 0;
    if (residency_serve(t->device, t->requested, t->bytes, t->category, &a) < 0) {
        /* The shim's own backing had no room for it: an OOM at the ceiling, not the driver's. */
        budget_release(track_slot(t), t->bytes);
        track_oom(t, 1);
        return -1;
    }
    track_alloc_end(t, 1, 0, a, stream);
    residency_served(a);
    *addr = a;
    return 1;
}

/* One field of a record, stored where the record is reserved (no alignment promised): a
 * record assembled on the stack first would be copied twice. */
#define TRACK_PUT(p, type, field, value)                                                           \
    do {                                                                                           \
        __typeof__(((type *)0)->field) track_v_ = (value);                                         \
        memcpy((char *)(p) + offsetof(type, field), &track_v_, sizeof track_v_);                   \
    } while (0)

/* Released before the real free, the bytes could go to another thread's allocation while
 * the driver still holds them, and the device would pass the ceiling: they leave the budget
 * when the hook leaves its guard, after the real call. */
static void track_release_later(int slot, uint8_t category, uint64_t bytes)
{
    struct track_pending p = {.slot = slot, .category = category, .bytes = bytes};
    if (!bytes)
        return;
    if (guard_held() && !track_tls.first.bytes)
        track_tls.first = p;
    else if (guard_held() && track_tls.nmore < TRACK_PENDING_FREES - 1)
        track_tls.more[track_tls.nmore++] = p;
    else
        budget_free(slot, category, bytes);
}

/* A free on a stream takes the long FREE, which carries it; see track_write_free. */
static MS_NOINLINE void track_write_free_long(uint64_t addr, enum mst_alloc_kind kind,
                                              uint64_t stream, const struct registry_entry *e)
{
    uint32_t thread = trace_thread_id(); /* before the reservation, as in track_write_alloc */
    struct trace_slot slot;
    void *p = trace_reserve(MST_REC_FREE, sizeof(struct mst_rec_free), &slot);
    if (!p)
        return;
    TRACK_PUT(p, struct mst_rec_free, time_ns, clock_now_ns());
    TRACK_PUT(p, struct mst_rec_free, addr, addr);
    TRACK_PUT(p, struct mst_rec_free, size, e->size);
    TRACK_PUT(p, struct mst_rec_free, stream, stream);
    TRACK_PUT(p, struct mst_rec_free, thread, thread);
    TRACK_PUT(p, struct mst_rec_free, site, e->site);
    TRACK_PUT(p, struct mst_rec_free, kind, (uint8_t)kind);
    TRACK_PUT(p, struct mst_rec_free, device, e->device);
    TRACK_PUT(p, struct mst_rec_free, flags, e->flags);
    TRACK_PUT(p, struct mst_rec_free, reserved, 0);
    trace_commit(&slot);
}

/* A free on no stream takes the short FREE: the ALLOC already says the size and the site. */
static inline void track_write_free(uint64_t addr, enum mst_alloc_kind kind, uint64_t stream,
                                    const struct registry_entry *e)
{
    if (stream) {
        track_write_free_long(addr, kind, stream, e);
        return;
    }
    uint32_t thread = trace_thread_id(); /* before the reservation, as in track_write_alloc */
    struct trace_slot slot;
    void *p = trace_reserve(MST_REC_FREE, sizeof(struct mst_rec_free_short), &slot);
    if (!p)
        return;
    TRACK_PUT(p, struct mst_rec_free_short, time_ns, clock_now_ns());
    TRACK_PUT(p, struct mst_rec_free_short, addr, addr);
    TRACK_PUT(p, struct mst_rec_free_short, thread, thread);
    TRACK_PUT(p, struct mst_rec_free_short, kind, (uint8_t)kind);
    TRACK_PUT(p, struct mst_rec_free_short, device, e->device);
    TRACK_PUT(p, struct mst_rec_free_short, flags, e->flags);
    TRACK_PUT(p, struct mst_rec_free_short, reserved, 0);
    trace_commit(&slot);
}

int track_free(uint64_t addr, enum mst_alloc_kind kind, uint64_t stream)
{
    if (!track_active())
        return 0;
    struct registry_entry e;
    enum registry_ns ns = kind == MST_KIND_CU_MEM_CREATE ? REGISTRY_HANDLE : REGISTRY_ADDR;
    if (!registry_remove(ns, addr, &e))
        return 0;
    /* Recorded before the address can be handed out again (residency_free releases a range
     * the shim serves; the caller's real free comes after this returns): another thread's
     * ALLOC of the same address must come after this FREE in the trace. */
    if (trace_enabled())
        track_write_free(addr, kind, stream, &e);
    int owned =
        ns == REGISTRY_ADDR && residency_enabled() && residency_free(e.addr, e.category, e.size);
    if (!owned)
        track_release_later(track_entry_slot(&e), e.category, e.size);
    return owned ? TRACK_FREED_SERVED : 1;
}

int track_retag(uint64_t addr, enum mst_category category)
{
    struct registry_entry e, old;
    if (!track_active() || (unsigned)category >= MST_CATEGORY_MAX ||
        !registry_containing(REGISTRY_ADDR, addr, &e) || e.category == (uint8_t)category ||
        (e.flags & MST_ALLOC_F_CAT_TAGGED))
        return 0;
    if (!registry_set_category(REGISTRY_ADDR, e.addr, (uint8_t)category, &old) ||
        old.category == (uint8_t)category)
        return 0;
    budget_uncommit(track_entry_slot(&old), old.category, old.size);
    budget_commit(track_entry_slot(&old), (uint8_t)category, old.size);
    if (trace_enabled()) {
        struct mst_rec_retag rec = {.time_ns = clock_now_ns(),
                                    .addr = old.addr,
                                    .category = (uint8_t)category,
                                    .flags = old.flags,
                                    .device = old.device};
        trace_record(MST_REC_RETAG, &rec, sizeof rec, NULL, 0);
    }
    return 1;
}

/* ---- tensors inside a caching allocator's segments ---- */

/* A tensor's category from the program (app API, the user's rules or phases: `from_user`, as
 * track_classify answered) is kept. The built-in rules' guesses for what a tensor's lifetime
 * tells better (the autograd engine's frames are on every backward allocation, gradient or not)
 * are left to the analyzer; their categories that no lifetime shows (workspace, communication,
 * kv_cache) are kept. */
static int track_tensor_keeps(const struct track_ticket *k, int from_user)
{
    if (!k->category)
        return 0;
    return from_user || k->category == MST_CAT_WORKSPACE || k->category == MST_CAT_COMMUNICATION ||
           k->category == MST_CAT_KV_CACHE;
}

MS_NOINLINE void track_tensor_begin(struct track_tensor *t)
{
    *t = (struct track_tensor){.outer = track_tls.in_pool, .autograd = -1};
    if (!track_active() || !trace_enabled())
        return;
    track_tls.in_pool = 1;
    struct track_ticket k = {.site = callsite_capture()};
    int from_user = track_classify(&k);
    t->site = k.site;
    if (track_tensor_keeps(&k, from_user)) {
        t->category = k.category;
        t->flags = k.flags;
    }
}

void track_tensor_end(const struct track_tensor *t, uint64_t addr, uint64_t size,
                      uint64_t requested, int device)
{
    track_tls.in_pool = t->outer;
    if (!addr || !track_active() || !trace_enabled())
        return;
    struct mst_rec_tensor_alloc rec = {.time_ns = clock_now_ns(),
                                       .addr = addr,
                                       .size = size,
                                       .requested = requested,
                                       .thread = trace_thread_id(),
                                       .site = t->site,
                                       .phase = track_phase_id(),
                                       .category = t->category,
                                       .device = (uint8_t)(device < 0 ? 0 : device),
                                       .flags = t->flags};
    if (t->autograd < 0) {
        trace_record_fixed(MST_REC_TENSOR_ALLOC, &rec, sizeof rec);
        return;
    }
    /* One reservation for both: the link costs no second gate, thread id or atomic add. */
    struct mst_rec_autograd link = {.addr = addr,
                                    .seq = t->seq,
                                    .fwd_thread = t->forward,
                                    .thread = rec.thread,
                                    .kind = (uint8_t)t->autograd};
    trace_record_fixed_pair(MST_REC_TENSOR_ALLOC, &rec, sizeof rec, MST_REC_AUTOGRAD, &link,
                            sizeof link);
}

void track_tensor_free(uint64_t addr)
{
    if (!addr || !track_active() || !trace_enabled())
        return;
    struct mst_rec_tensor_free rec = {
        .time_ns = clock_now_ns(), .addr = addr, .thread = trace_thread_id()};
    trace_record_fixed(MST_REC_TENSOR_FREE, &rec, sizeof rec);
}

static void track_write_map(uint16_t kind, int device, uint64_t addr, uint64_t size,
                            uint64_t handle)
{
    if (!trace_enabled())
        return;
    trace_touch();
    struct mst_rec_map rec = {.time_ns = clock_now_ns(),
                              .addr = addr,
                              .size = size,
                              .handle = handle,
                              .thread = trace_thread_id(),
                              .device = (uint8_t)device};
    trace_record(kind, &rec, sizeof rec, NULL, 0);
}

void track_map(int device, uint64_t addr, uint64_t size, uint64_t handle)
{
    if (!track_active())
        return;
    struct registry_entry e = {
        .addr = addr, .size = size, .handle = handle, .device = (uint8_t)device};
    registry_insert(REGISTRY_MAP, &e, NULL);
    handle_maps_add(handle);
    track_write_map(MST_REC_MAP, device, addr, size, handle);
}

/* The mappings an unmap of [addr, addr + size) ends: `first` at addr, then those that follow
 * it end to end. A handle the program released while mapped is freed at its last unmap. */
static void track_unmapped(uint64_t addr, uint64_t size, struct registry_entry e)
{
    for (uint64_t at = addr; e.size;) {
        if (handle_maps_remove(e.handle))
            track_free(e.handle, MST_KIND_CU_MEM_CREATE, 0);
        at += e.size;
        if (at - addr >= size || !registry_remove(REGISTRY_MAP, at, &e))
            break;
    }
}

void track_unmap(int device, uint64_t addr, uint64_t size)
{
    if (!track_active())
        return;
    struct registry_entry e = {0};
    registry_remove(REGISTRY_MAP, addr, &e);
    track_write_map(MST_REC_UNMAP, device, addr, size, e.handle);
    track_unmapped(addr, size, e);
}

void track_mem_info(int device, size_t *free_bytes, size_t *total_bytes)
{
    if (track_active())
        budget_mem_info(device, free_bytes, total_bytes);
}

/* ---- phases, steps, tags ---- */

static void track_write_phase(uint16_t kind, uint32_t name_id)
{
    struct mst_rec_phase rec = {
        .time_ns = clock_now_ns(), .thread = trace_thread_id(), .name_id = name_id};
    trace_record(kind, &rec, sizeof rec, NULL, 0);
}

/* The step number in a range name ("step 12", "train_step_12"): its last digits. */
static int track_step_number(const char *name, uint64_t *out)
{
    const char *end = name + strlen(name);
    const char *p = end;
    while (p > name && !isdigit((unsigned char)p[-1]))
        p--;
    const char *digits_end = p;
    while (p > name && isdigit((unsigned char)p[-1]))
        p--;
    if (p == digits_end || digits_end - p > 18)
        return -1;
    *out = strtoull(p, NULL, 10);
    return 0;
}

void track_phase_push(const char *name)
{
    if (!track_active() || !name)
        return;
    const struct strtab_entry *e = strtab_intern(name, strlen(name));
    uint16_t n = track_tls.nphases;
    if (n == UINT16_MAX)
        return;
    /* Levels past TRACK_MAX_PHASES (or unnamed for lack of memory) are counted, so pops
     * stay balanced, but not recorded. */
    track_tls.nphases = n + 1;
    if (n < TRACK_MAX_PHASES)
        track_tls.phases[n] = e;
    track_phase_settle();
    if (n >= TRACK_MAX_PHASES || !e)
        return;
    if (trace_enabled())
        track_write_phase(MST_REC_PHASE_PUSH, e->id);
    if (fnmatch(options_str(OPT_STEP_RANGE), e->str, 0) == 0) {
        uint64_t step;
        if (track_step_number(e->str, &step) < 0)
            step = atomic_fetch_add(&track_step_count, 1) + 1;
        track_step(step);
    }
}

void track_phase_pop(void)
{
    uint16_t n = track_tls.nphases;
    if (!track_active() || n == 0)
        return;
    track_tls.nphases = n - 1;
    track_phase_settle();
    if (trace_enabled() && n <= TRACK_MAX_PHASES && track_tls.phases[n - 1])
        track_write_phase(MST_REC_PHASE_POP, track_tls.phases[n - 1]->id);
}

void track_step(uint64_t n)
{
    /* memshim_step_begin(n) and an NVTX range "step n" often mark the same boundary. */
    if (!track_active() || atomic_exchange(&track_last_step, n) == n)
        return;
    residency_step();
    if (!trace_enabled())
        return;
    struct mst_rec_step rec = {.time_ns = clock_now_ns(), .step = n, .thread = trace_thread_id()};
    trace_record(MST_REC_STEP, &rec, sizeof rec, NULL, 0);
}

int track_tag_push(const char *category)
{
    int c = category ? rules_category(category, strlen(category)) : -1;
    if (c < 0)
        return -1;
    uint8_t n = track_tls.ntags;
    if (n < TRACK_MAX_TAGS)
        track_tls.tags[n] = (uint8_t)c;
    if (n < UINT8_MAX)
        track_tls.ntags = n + 1;
    return 0;
}

void track_tag_pop(void)
{
    if (track_tls.ntags)
        track_tls.ntags--;
}

void track_flush(void)
{
    if (track_active())
        trace_flush();
}

/* ---- the residency policy's notifications, from the hooks ---- */

int track_remat(void)
{
    return residency_remat();
}

void track_stream_alloc(uint64_t stream)
{
    residency_stream_alloc(stream);
}

void track_gemm_written(const struct lineage_call *call, const uint64_t *in, unsigned nin,
                        uint64_t flops, uint64_t ws, uint64_t ws_bytes)
{
    residency_gemm_written(call, in, nin, flops, ws, ws_bytes);
}

void track_blas_handle(uint64_t handle)
{
    residency_blas_handle(handle);
}

int track_forget_lineages(void)
{
    return residency_forget_lineages();
}

void track_expose(const uint64_t *addrs, size_t n)
{
    residency_expose(addrs, n);
}

void track_scan_host(const void *src, uint64_t bytes)
{
    residency_scan_host(src, bytes);
}

int track_owned_range(uint64_t addr, uint64_t *base, uint64_t *size, int *device)
{
    return residency_enabled() && residency_lookup(addr, base, size, device);
}

void track_release_handle(uint64_t handle)
{
    if (!handle_maps_release(handle))
        track_free(handle, MST_KIND_CU_MEM_CREATE, 0);
}

static MS_NOINLINE void track_release_more(void)
{
    for (uint8_t i = 0; i < track_tls.nmore; i++)
        budget_free(track_tls.more[i].slot, track_tls.more[i].category, track_tls.more[i].bytes);
    track_tls.nmore = 0;
}

/* Inlined into every hook: an allocation's has nothing to let go of, a free's one range. */
MS_HOT void track_guard_leave(void)
{
    if (track_tls.first.bytes) {
        budget_free(track_tls.first.slot, track_tls.first.category, track_tls.first.bytes);
        track_tls.first.bytes = 0;
        if (ms_unlikely(track_tls.nmore))
            track_release_more();
    }
    guard_leave();
}
