/* access: resolve an operation's byte ranges to tracked allocations, write its OP and ACCESS
 * records, and collect the allocations the call needs on the device; see access.h. */
#include "access.h"

#include "access_memo.h"
#include "access_repeat.h"

#include "clock.h"
#include "compat.h"
#include "options.h"
#include "registry.h"
#include "residency.h"
#include "strtab.h"
#include "trace.h"

#include <stdatomic.h>
#include <string.h>

/* Ranges one call records (more are dropped): an OP and its ACCESS records go out in one
 * reservation, framed on the stack. */
#define ACCESS_MAX_RANGES 128
/* Entry points and kernels whose name id is remembered by pointer (open addressing). */
#define ACCESS_NAME_SLOTS 4096u
#define ACCESS_NAME_PROBE 16u

struct access_name_slot {
    _Atomic uintptr_t key; /* the name pointer; 0 = free */
    _Atomic uint32_t id;   /* 0 while the claiming thread interns it */
};

static _Atomic int access_lvl = ACCESS_OFF;
static struct access_name_slot access_names[ACCESS_NAME_SLOTS];

void access_init(void)
{
    uint64_t v = options_uint(OPT_ACCESS);
    atomic_store(&access_lvl, v == OPT_ACCESS_OFF    ? ACCESS_OFF
                              : v == OPT_ACCESS_GEMM ? ACCESS_GEMM
                                                     : ACCESS_ALL);
    access_repeat_init();
    access_memo_init();
}

enum access_level access_level(void)
{
    return (enum access_level)atomic_load_explicit(&access_lvl, memory_order_relaxed);
}

void access_atfork_child(void)
{
    memset(access_names, 0, sizeof access_names);
}

/* STRING id of a name that lives as long as the process, interned once per pointer: after the
 * first call a name costs a few loads, never the string table's lock. */
static uint32_t access_name_id(const char *name)
{
    if (!name)
        return 0;
    uintptr_t key = (uintptr_t)name;
    uint32_t h = (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 40);
    for (uint32_t p = 0; p < ACCESS_NAME_PROBE; p++) {
        struct access_name_slot *s = &access_names[(h + p) % ACCESS_NAME_SLOTS];
        uintptr_t k = atomic_load_explicit(&s->key, memory_order_acquire);
        if (k == 0) {
            uintptr_t expect = 0;
            if (atomic_compare_exchange_strong(&s->key, &expect, key)) {
                const struct strtab_entry *e = strtab_intern(name, strlen(name));
                uint32_t id = e ? e->id : 0;
                atomic_store_explicit(&s->id, id, memory_order_release);
                return id;
            }
            k = expect;
        }
        if (k == key) {
            uint32_t id = atomic_load_explicit(&s->id, memory_order_acquire);
            if (id)
                return id;
            break; /* another thread is interning it right now: the table is by content */
        }
    }
    const struct strtab_entry *e = strtab_intern(name, strlen(name));
    return e ? e->id : 0;
}

/* The tracked allocation or mapping holding `addr`, if any. */
static int access_resolve(uint64_t addr, enum registry_ns *ns, struct registry_entry *e)
{
    if (registry_containing(REGISTRY_ADDR, addr, e)) {
        *ns = REGISTRY_ADDR;
        return 1;
    }
    if (registry_containing(REGISTRY_MAP, addr, e)) {
        *ns = REGISTRY_MAP;
        return 1;
    }
    return 0;
}

struct access_frame {
    struct mst_record_header h;
    struct mst_rec_access a;
};
_Static_assert(sizeof(struct access_frame) ==
                   sizeof(struct mst_record_header) + sizeof(struct mst_rec_access),
               "ACCESS records are framed back to back");

/* An OP and its ACCESS records as they are assembled. The thread's own, not a frame's: the
 * records name allocations, and what a hook leaves on the stack below the framework's frames
 * is read back as words of a later kernel's parameters (intercept_launch.c). One at a time per
 * thread: records are written only inside the thread's guard. */
static MS_TLS struct {
    struct access_repeat_group g;
    struct access_frame acc[ACCESS_MAX_RANGES];
} __attribute__((packed)) access_out;

/* The OP and its ACCESS records, in one reservation. Range i is ranges[i] in alloc[i], or,
 * without ranges, the whole of use[i] with modes[i]. */
static void access_write(const struct access_op *op, const struct access_range *ranges,
                         const uint64_t *alloc, const struct access_use *use, size_t n,
                         const uint8_t *modes, struct access_shape *shape)
{
    __typeof__(access_out) *out = &access_out;
    trace_touch();
    for (size_t i = 0; i < n; i++) {
        out->acc[i].h = (struct mst_record_header){.kind = MST_REC_ACCESS,
                                                   .length = sizeof(struct mst_rec_access)};
        out->acc[i].a = ranges ? (struct mst_rec_access){.addr = ranges[i].addr,
                                                         .size = ranges[i].size,
                                                         .alloc_addr = alloc[i],
                                                         .mode = ranges[i].mode}
                               : (struct mst_rec_access){.addr = use[i].e.addr,
                                                         .size = use[i].e.size,
                                                         .alloc_addr = use[i].e.addr,
                                                         .mode = modes[i]};
    }
    out->g.op_h = (struct mst_record_header){.kind = MST_REC_OP, .length = sizeof out->g.op};
    out->g.op = (struct mst_rec_op){.time_ns = clock_now_ns(),
                                    .stream = op->stream,
                                    .m = op->m,
                                    .n = op->n,
                                    .k = op->k,
                                    .batch = op->batch,
                                    .flops = op->flops,
                                    .thread = trace_thread_id(),
                                    .name_id = access_name_id(op->name),
                                    .naccess = (uint32_t)n,
                                    .kind = op->kind,
                                    .dtype_a = op->dtype_a,
                                    .dtype_b = op->dtype_b,
                                    .dtype_c = op->dtype_c};
    access_repeat_write(&out->g, n, shape);
}

static int access_prepare(const struct access_use *use, const uint8_t *modes, size_t nuse);

int access_recording(void)
{
    return access_level() != ACCESS_OFF && (trace_enabled() || residency_enabled());
}

static inline int access_wanted(const struct access_op *op)
{
    return op && access_recording();
}

/* Whether a repeat could be written by name alone (access_repeat_shape's conditions): only the
 * trace reads the record, and residency, which needs the allocations, is off. */
static inline int access_by_name(void)
{
    return !residency_enabled() && trace_enabled();
}

/* access_record past the memo: resolve, write, and keep the shape under *key (may be NULL). */
static int access_record_full(const struct access_op *op, const struct access_range *ranges,
                              size_t n, const struct access_memo_key *key)
{
    /* The thread's own, not a frame's, as access_out. */
    static MS_TLS struct {
        uint64_t alloc[ACCESS_MAX_RANGES];
        struct access_use use[ACCESS_MAX_RANGES];
        uint8_t modes[ACCESS_MAX_RANGES];
    } found;
    uint64_t *alloc = found.alloc;
    struct access_use *use = found.use;
    uint8_t *modes = found.modes;
    struct access_shape shape = {0};
    size_t nuse = 0;
    for (size_t i = 0; i < n; i++) {
        /* Looked up into the next free slot (nuse <= i < n), kept there if it is a new one. */
        struct access_use *u = &use[nuse];
        alloc[i] = 0;
        if (!access_resolve(ranges[i].addr, &u->ns, &u->e))
            continue;
        alloc[i] = u->e.addr;
        size_t j = 0;
        while (j < nuse && !(use[j].e.addr == u->e.addr && use[j].ns == u->ns))
            j++;
        if (j == nuse)
            modes[nuse++] = 0;
        modes[j] |= ranges[i].mode;
    }
    if (trace_enabled())
        access_write(op, ranges, alloc, NULL, n, NULL, key ? &shape : NULL);
    if (key)
        access_memo_keep(key, &shape);
    return access_prepare(use, modes, nuse);
}

int access_record(const struct access_op *op, const struct access_range *ranges, size_t n)
{
    if (!access_wanted(op))
        return 0;
    if (n > ACCESS_MAX_RANGES)
        n = ACCESS_MAX_RANGES;
    /* The thread's own, not a frame's, as access_out. */
    static MS_TLS struct access_memo_key key;
    struct access_shape shape;
    int memo = access_by_name() && access_memo_key(&key, op, ranges, n);
    if (memo && access_memo_find(&key, &shape) && access_repeat_shape(&shape))
        return 0;
    return access_record_full(op, ranges, n, memo ? &key : NULL);
}

int access_repeat_call(struct access_memo_key *key, const uint64_t *w, size_t n)
{
    struct access_shape shape;
    if (!access_recording() || !access_by_name() || !access_memo_words(key, w, n)) {
        key->nwords = 0;
        return 0;
    }
    return access_memo_find(key, &shape) && access_repeat_shape(&shape);
}

int access_record_call(const struct access_memo_key *key, const struct access_op *op,
                       const struct access_range *ranges, size_t n)
{
    if (!key->nwords)
        return access_record(op, ranges, n);
    if (!access_wanted(op))
        return 0;
    if (n > ACCESS_MAX_RANGES)
        n = ACCESS_MAX_RANGES;
    return access_record_full(op, ranges, n, key);
}

void access_done(void)
{
    residency_call_done();
}

int access_record_allocations(const struct access_op *op, const struct access_use *use, size_t n,
                              uint8_t mode)
{
    if (access_level() == ACCESS_OFF || !op)
        return 0;
    if (n > ACCESS_MAX_RANGES)
        n = ACCESS_MAX_RANGES;
    uint8_t modes[ACCESS_MAX_RANGES];
    memset(modes, mode, n);
    return access_record_allocations_shape(op, use, modes, n, NULL);
}

int access_record_allocations_shape(const struct access_op *op, const struct access_use *use,
                                    const uint8_t *modes, size_t n, struct access_shape *shape)
{
    if (shape)
        shape->slot = 0;
    if (!access_wanted(op))
        return 0;
    if (n > ACCESS_MAX_RANGES)
        n = ACCESS_MAX_RANGES;
    if (trace_enabled())
        access_write(op, NULL, NULL, use, n, modes, shape);
    return access_prepare(use, modes, n);
}

int access_repeat_shape(const struct access_shape *shape)
{
    /* Residency needs the allocations themselves, which the caller did not look up. */
    if (shape->slot == 0 || access_level() == ACCESS_OFF || !access_by_name())
        return 0;
    return access_repeat_again(shape, clock_now_ns());
}

/* Bring the allocations a call is about to use onto the device. */
static int access_prepare(const struct access_use *use, const uint8_t *modes, size_t nuse)
{
    /* Residency: use[0..nuse) are the tracked allocations (and mappings) this call is about to
     * touch; they must be on the device before the real call runs. */
    if (!residency_enabled())
        return 0;
    uint64_t bases[ACCESS_MAX_RANGES];
    uint8_t bmodes[ACCESS_MAX_RANGES];
    size_t nb = 0;
    for (size_t j = 0; j < nuse; j++)
        if (use[j].ns == REGISTRY_ADDR) {
            bmodes[nb] = modes[j];
            bases[nb++] = use[j].e.addr;
        }
    return residency_prepare(bases, bmodes, nb);
}
