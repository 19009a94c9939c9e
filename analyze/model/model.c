/* Replay model. See model.h.
 *
 * Peaks are snapshotted lazily: a new peak only marks the state "at peak"; the breakdown by
 * category and by site is copied just before the first change that lowers the total or moves
 * bytes between categories. A run that climbs for a million allocations thus copies once, not a
 * million times. */
#include "model.h"
#include "model_struct.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf_lines.h"
#include "refine.h"
#include "symbolize.h"

#define DEFAULT_MAX_OOMS 1024
#define DIRTY_PEAK       1u
#define DIRTY_STEP       2u

/* struct model_alloc starts with the fields of an ALLOC record, in the same places. */
#define SAME_FIELD(f)                                                                              \
    (offsetof(struct model_alloc, f) == offsetof(struct mst_rec_alloc, f) &&                       \
     sizeof(((struct model_alloc *)0)->f) == sizeof(((struct mst_rec_alloc *)0)->f))
_Static_assert(SAME_FIELD(time_ns) && SAME_FIELD(addr) && SAME_FIELD(size) &&
                   SAME_FIELD(requested) && SAME_FIELD(stream) && SAME_FIELD(thread) &&
                   SAME_FIELD(site) && SAME_FIELD(phase) && SAME_FIELD(kind) &&
                   SAME_FIELD(category) && SAME_FIELD(device) && SAME_FIELD(flags) &&
                   sizeof(struct mst_rec_alloc) <= offsetof(struct model_alloc, step),
               "model_alloc must begin with the layout of mst_rec_alloc");

_Static_assert(offsetof(struct model_alloc, phase_seq) - offsetof(struct model_alloc, step) ==
                       offsetof(struct alloc_stamp, phase_seq) &&
                   offsetof(struct model_alloc, residency) - offsetof(struct model_alloc, step) ==
                       offsetof(struct alloc_stamp, residency) &&
                   offsetof(struct model_alloc, model_flags) - offsetof(struct model_alloc, step) ==
                       offsetof(struct alloc_stamp, model_flags) &&
                   offsetof(struct model_alloc, general_free) -
                           offsetof(struct model_alloc, step) ==
                       offsetof(struct alloc_stamp, general_free) &&
                   sizeof(struct model_alloc) - offsetof(struct model_alloc, step) ==
                       sizeof(struct alloc_stamp) &&
                   MODEL_RESIDENT == 0,
               "struct alloc_stamp is the tail of struct model_alloc");

/* The short ALLOC holds time, addr and size where the long one does, and from thread on the
 * same fields in the same order: two copies move it into a model_alloc. */
#define SHORT_SAME(f)                                                                              \
    (offsetof(struct mst_rec_alloc_short, f) - offsetof(struct mst_rec_alloc_short, thread) ==     \
     offsetof(struct mst_rec_alloc, f) - offsetof(struct mst_rec_alloc, thread))
#define SHORT_ALLOC_TAIL                                                                           \
    (sizeof(struct mst_rec_alloc_short) - offsetof(struct mst_rec_alloc_short, thread))
_Static_assert(
    offsetof(struct mst_rec_alloc_short, unrequested) ==
            offsetof(struct mst_rec_alloc, requested) &&
        offsetof(struct mst_rec_alloc_short, addr) == offsetof(struct mst_rec_alloc, addr) &&
        offsetof(struct mst_rec_alloc_short, size) == offsetof(struct mst_rec_alloc, size) &&
        SAME_FIELD(time_ns) && SAME_FIELD(addr) && SAME_FIELD(size) && SHORT_SAME(site) &&
        SHORT_SAME(phase) && SHORT_SAME(kind) && SHORT_SAME(category) && SHORT_SAME(device) &&
        SHORT_SAME(flags) &&
        SHORT_ALLOC_TAIL == sizeof(struct mst_rec_alloc) - offsetof(struct mst_rec_alloc, thread),
    "the short ALLOC is the long one less requested and stream, plus unrequested");

/* ---- live table ---------------------------------------------------------------------------- */

_Static_assert(MST_ALLOC_F_HANDLE == 1, "live_key shifts the handle flag from bit 0");

/* The device in bits 48-55 and the handle flag in bit 56, next to each other as they lie in the
 * records, so that the batched replay takes both from one load (RECORD_KEY). */
static inline uint64_t live_key(uint8_t device, uint64_t addr, uint8_t flags)
{
    return addr ^ ((uint64_t)(device | (uint32_t)(flags & MST_ALLOC_F_HANDLE) << 8) << 48);
}

/* live_key() of an ALLOC or FREE record r, whose device is byte b of the 32-bit word that
 * starts at its kind field, and flags byte b + 1: one load and a mask instead of two loads. */
#define RECORD_KEY(r, b)                                                                           \
    ((r)->addr ^ ((uint64_t)(record_word(&(r)->kind) & (0x1ffu << 8 * (b))) << (48 - 8 * (b))))
static inline uint32_t record_word(const uint8_t *at)
{
    uint32_t w;
    memcpy(&w, at, sizeof w);
    return w; /* the trace is little-endian, as the reader requires of the host */
}
_Static_assert(
    offsetof(struct mst_rec_alloc, device) == offsetof(struct mst_rec_alloc, kind) + 2 &&
        offsetof(struct mst_rec_alloc, flags) == offsetof(struct mst_rec_alloc, kind) + 3 &&
        offsetof(struct mst_rec_free, device) == offsetof(struct mst_rec_free, kind) + 1 &&
        offsetof(struct mst_rec_free, flags) == offsetof(struct mst_rec_free, kind) + 2 &&
        offsetof(struct mst_rec_free_short, device) ==
            offsetof(struct mst_rec_free_short, kind) + 1 &&
        offsetof(struct mst_rec_free_short, flags) == offsetof(struct mst_rec_free_short, kind) + 2,
    "RECORD_KEY reads device and flags next to each other after kind");

/* Fibonacci hashing: one multiply carries the bits in which device addresses differ (the
 * middle ones: the low ones are alignment, the high ones the VA range) into the top bits,
 * which pick the slot. */
static inline uint64_t live_home(const struct live_table *t, uint64_t key)
{
    return (key * 0x9e3779b97f4a7c15ull) >> t->shift;
}

/* Position of `key` in an existing index, probing from its `home`; -1 if absent. */
static inline int64_t live_position_at(const struct live_table *t, uint64_t key, uint64_t home)
{
    for (uint64_t i = home;; i = (i + 1) & t->mask) {
        if (!t->index[i].item)
            return -1;
        if (t->index[i].key == key)
            return (int64_t)i;
    }
}

static inline int64_t live_position(const struct live_table *t, uint64_t key)
{
    return t->index ? live_position_at(t, key, live_home(t, key)) : -1;
}

static struct model_alloc *live_find(const struct live_table *t, uint64_t key)
{
    int64_t i = live_position(t, key);
    return i < 0 ? NULL : &t->items[t->index[i].item - 1];
}

static int live_grow_index(struct live_table *t)
{
    uint64_t cap = t->index ? (t->mask + 1) * 2 : 4096;
    if (cap > (1ull << 32)) /* homes are 32-bit; the pool stops at 2^31 items anyway */
        return -1;
    struct live_entry *index = calloc(cap, sizeof *index);
    if (!index)
        return -1;
    struct live_table grown = *t;
    grown.index = index;
    grown.mask = cap - 1;
    grown.shift = (unsigned)__builtin_clzll(cap) + 1;
    grown.grow_at = cap / 4;
    for (uint64_t i = 0; t->index && i <= t->mask; i++) {
        if (!t->index[i].item)
            continue;
        uint64_t j = live_home(&grown, t->index[i].key);
        while (index[j].item)
            j = (j + 1) & grown.mask;
        index[j] = t->index[i];
        index[j].home = (uint32_t)live_home(&grown, t->index[i].key);
    }
    free(t->index);
    *t = grown;
    return 0;
}

/* A new item at the end of the pool, or UINT32_MAX when it cannot grow. */
static uint32_t live_append_item(struct live_table *t)
{
    if (t->nitems == t->cap_items) {
        uint32_t cap = t->cap_items ? t->cap_items * 2 : 1024;
        if (cap > (1u << 31))
            return UINT32_MAX;
        struct model_alloc *items = realloc(t->items, (size_t)cap * sizeof *items);
        if (!items)
            return UINT32_MAX;
        t->items = items;
        t->cap_items = cap;
    }
    return t->nitems++;
}

/* A free item of the pool, or UINT32_MAX when it cannot grow. */
static inline uint32_t live_new_item(struct live_table *t)
{
    if (!t->free_top)
        return live_append_item(t);
    uint32_t item = t->free_top - 1;
    t->free_top = t->items[item].site;
    return item;
}

/* The allocation record for `key`: the live one (*existed = 1) or a fresh one, which the caller
 * fills (its residency marks it in use); NULL when out of memory. The index stays at most a
 * quarter full, which keeps probes short. */
static inline __attribute__((always_inline)) struct model_alloc *
live_claim_at(struct live_table *t, uint64_t key, uint64_t home, int *existed)
{
    uint64_t i = home;
    while (t->index[i].item && t->index[i].key != key)
        i = (i + 1) & t->mask;
    *existed = t->index[i].item != 0;
    if (!*existed) {
        uint32_t item = live_new_item(t);
        if (item == UINT32_MAX)
            return NULL;
        t->index[i] = (struct live_entry){.key = key, .item = item + 1, .home = (uint32_t)home};
        t->count++;
    }
    return &t->items[t->index[i].item - 1];
}

/* live_claim_at() after making room when the index is a quarter full (the claim, with `home`,
 * assumes an index with room). */
static inline __attribute__((always_inline)) struct model_alloc *
live_claim(struct live_table *t, uint64_t key, int *existed)
{
    if (t->count >= t->grow_at && live_grow_index(t) != 0)
        return NULL;
    return live_claim_at(t, key, live_home(t, key), existed);
}

/* Removes the entry at index position `pos`, which holds pool item `item`. */
static inline __attribute__((always_inline)) void live_remove_item(struct live_table *t,
                                                                   uint64_t pos, uint32_t item)
{
    uint64_t i = pos;
    t->items[item].residency = ITEM_FREE;
    t->items[item].site = t->free_top;
    t->free_top = item + 1;
    t->count--;
    uint64_t j = (i + 1) & t->mask;
    /* Most often, the index being sparse, the next slot is empty and nothing moves: apart, that
     * case clears the hole through the address the lookup already computed. */
    if (__builtin_expect(!t->index[j].item, 1)) {
        t->index[i].item = 0;
        return;
    }
    for (; t->index[j].item; j = (j + 1) & t->mask) {
        /* j moves back into the hole at i unless its home lies cyclically in (i, j], that is
         * unless it is nearer to j than i is: one comparison of distances, no wrap cases */
        if (((j - t->index[j].home) & t->mask) >= ((j - i) & t->mask)) {
            t->index[i] = t->index[j];
            i = j;
        }
    }
    t->index[i].item = 0;
}

/* Removes the entry at index position `pos` (from live_position). */
static inline __attribute__((always_inline)) void live_remove_at(struct live_table *t, int64_t pos)
{
    live_remove_item(t, (uint64_t)pos, t->index[pos].item - 1);
}

static void live_free(struct live_table *t)
{
    free(t->index);
    free(t->items);
}

/* ---- accounting ---------------------------------------------------------------------------- */

static int site_index(struct model *m, uint32_t site)
{
    if (site < m->cap_sites)
        return 0;
    uint32_t cap_peak = m->cap_sites, cap_info = m->cap_sites;
    if (ensure((void **)&m->site_at_peak, &cap_peak, sizeof *m->site_at_peak, site) ||
        ensure((void **)&m->site_info, &cap_info, sizeof *m->site_info, site))
        return -1;
    m->cap_sites = cap_peak < cap_info ? cap_peak : cap_info;
    return 0;
}

/* Copies the current state into the peak records it equals (see the top of the file). */
static void settle_now(struct model *m)
{
    if (m->dirty & DIRTY_PEAK) {
        memcpy(m->peak.by_category, m->st.resident_by_category, sizeof m->peak.by_category);
        memcpy(m->peak.inferred_by_category, m->st.inferred_by_category,
               sizeof m->peak.inferred_by_category);
        m->peak.live_count = m->live.count; /* st.live_count, which may not be current */
        m->peak.requested = m->st.resident_requested;
        for (uint32_t i = 0; i < m->cap_sites; i++)
            m->site_at_peak[i] = m->site_info[i].now;
        m->dirty &= ~DIRTY_PEAK;
    }
    if (m->dirty & DIRTY_STEP) {
        struct model_step *s = m->cur_step;
        memcpy(s->peak_by_category, m->st.resident_by_category, sizeof s->peak_by_category);
        m->dirty &= ~DIRTY_STEP;
    }
}

static inline void settle(struct model *m)
{
    if (m->dirty) {
        if (m->dirty & DIRTY_PEAK) {
            settle_now(m);
        } else { /* the usual case, once per step-peak: inline */
            memcpy(m->cur_step->peak_by_category, m->st.resident_by_category,
                   sizeof m->cur_step->peak_by_category);
            m->dirty = 0;
        }
    }
}

/* After a charge that raised st.resident, by a record of phase `phase` (st.phase, which the
 * batched replay's fast paths leave behind: see phase_after). */
static inline void note_increase(struct model *m, uint32_t phase)
{
    uint64_t resident = m->st.resident;
    if (resident > m->peak.bytes) {
        m->peak.bytes = resident;
        m->peak.time_ns = m->st.time_ns;
        m->peak.step = m->st.step;
        m->peak.phase = phase;
        m->dirty |= DIRTY_PEAK;
    }
    struct model_step *s = m->cur_step;
    if (resident > s->peak_bytes) {
        s->peak_bytes = resident;
        s->peak_time_ns = m->st.time_ns;
        m->dirty |= DIRTY_STEP;
    }
}

/* kind, category, device and flags, which an ALLOC record and a model_alloc hold side by side
 * (see SAME_FIELD), read as one word: the fast paths test them in one go. */
#define USUAL_MASK                                                                                 \
    (0xffu << 8 | 0xffu << 16 |                                                                    \
     (uint32_t)(MST_ALLOC_F_HANDLE | MST_ALLOC_F_HOST | MST_ALLOC_F_CAT_PHASE) << 24)
_Static_assert(offsetof(struct model_alloc, category) == offsetof(struct model_alloc, kind) + 1 &&
                   offsetof(struct model_alloc, device) == offsetof(struct model_alloc, kind) + 2 &&
                   offsetof(struct model_alloc, flags) == offsetof(struct model_alloc, kind) + 3 &&
                   MST_CAT_UNKNOWN == 0,
               "usual_bytes reads kind, category, device and flags as one word");

/* Whether the allocation whose kind field is at `kind` is on the sole device, in device memory,
 * at an address (not a handle: its live key is the address ^ sole_key), with a recorded category
 * that no phase guessed. sole_device_bits is the masked word of such
 * an allocation of category 1, so the usual ones lie in [bits, bits + 0xfe00]: one subtraction
 * and one unsigned comparison test it all, as a word with another device or flag lies 0xff00
 * or more above bits, or below them (and wraps), and category 0 wraps. */
static inline int usual_bytes(const struct model *m, const uint8_t *kind)
{
    return (record_word(kind) & USUAL_MASK) - m->sole_device_bits < 0xff00u;
}

/* Marks whether a FREE of `a` may take fast_free (usual, resident, of a category not inferred),
 * after anything that changed one of those, so that fast_free tests one byte of the item rather
 * than working it out again on every FREE. fast_alloc's items are such, from the stamp. */
static inline void mark_free_path(const struct model *m, struct model_alloc *a)
{
    a->general_free = !(usual_bytes(m, &a->kind) && a->residency == MODEL_RESIDENT &&
                        !(a->model_flags & MODEL_ALLOC_INFERRED));
}

static void set_sole_device(struct model *m, int device)
{
    /* an item was marked for fast_free on the sole device of then (see mark_free_path): with
     * none now, none is */
    if (device < 0)
        for (uint32_t i = 0; i < m->live.nitems; i++)
            m->live.items[i].general_free = 1;
    m->sole_device = device;
    /* with no sole device, bits that every masked word lies 2^31 or more from */
    m->sole_device_bits = device < 0 ? 1u << 31 : (uint32_t)device << 16 | 1u << 8;
    m->sole_key = device < 0 ? 0 : live_key((uint8_t)device, 0, 0);
}

/* Per-device figures for a charge of `delta` on `device` (already added to st.resident) when
 * the trace is not, or no longer, on one device. */
static void note_device(struct model *m, uint8_t device, uint64_t delta)
{
    if (!m->several_devices && m->sole_device < 0) {
        set_sole_device(m, device);
        return;
    }
    if (m->sole_device >= 0) {
        int d0 = m->sole_device;
        m->device_resident[d0] = m->st.resident - delta;
        m->device_peak[d0] = (struct model_device_peak){
            .used = 1, .bytes = m->peak.bytes, .time_ns = m->peak.time_ns, .step = m->peak.step};
        set_sole_device(m, -1);
        m->several_devices = 1;
    }
    uint64_t now = m->device_resident[device] += delta;
    struct model_device_peak *p = &m->device_peak[device];
    p->used = 1;
    if (now > p->bytes) {
        p->bytes = now;
        p->time_ns = m->st.time_ns;
        p->step = m->st.step;
    }
}

/* Adds (sign > 0) or removes the bytes of `a` from the state it is in. Always inlined: every
 * call passes a constant sign, and the replay's cost is mostly this function. The fields are
 * read once up front, since the stores below could alias them as far as the compiler knows. */
static inline __attribute__((always_inline)) void charge(struct model *m,
                                                         const struct model_alloc *a, int sign)
{
    const uint8_t flags = a->flags, residency = a->residency, category = a->category;
    const uint8_t device = a->device, inferred = a->model_flags & MODEL_ALLOC_INFERRED;
    const uint32_t site = a->site;
    const uint64_t delta = sign > 0 ? a->size : -a->size;
    if (flags & MST_ALLOC_F_HOST)
        return;
    if (residency != MODEL_RESIDENT) {
        int spilled = residency == MODEL_SPILLED;
        *(spilled ? &m->st.spilled : &m->st.dropped) += delta;
        (spilled ? m->st.spilled_by_category : m->st.dropped_by_category)[category] += delta;
        return;
    }
    if (sign < 0)
        settle(m);
    m->st.resident += delta;
    m->st.resident_requested += sign > 0 ? a->requested : -a->requested;
    m->st.resident_by_category[category] += delta;
    if (inferred)
        m->st.inferred_by_category[category] += delta;
    if (device != m->sole_device)
        note_device(m, device, delta);
    struct site_acc *sa = &m->site_info[site].now;
    sa->bytes += delta;
    sa->count += sign > 0 ? 1 : -1;
    if (sign > 0) {
        struct site_info *info = &m->site_info[site];
        if (sa->bytes > info->max_bytes)
            info->max_bytes = sa->bytes;
        note_increase(m, m->st.phase);
    }
}

/* ---- phases -------------------------------------------------------------------------------- */

static struct thread_phases *thread_phases(struct model *m, uint32_t thread)
{
    if (ensure((void **)&m->threads, &m->cap_threads, sizeof *m->threads, thread) != 0)
        return NULL;
    return &m->threads[thread];
}

static uint32_t current_phase(struct model *m, uint32_t thread)
{
    if (thread >= m->cap_threads || m->threads[thread].depth == 0)
        return 0;
    return m->threads[thread].stack[m->threads[thread].depth - 1];
}

/* st.phase as the unbatched replay would have it (see phase_pending). */
static inline void sync_phase(struct model *m)
{
    if (m->phase_pending) {
        m->st.phase = current_phase(m, m->phase_pending - 1);
        m->phase_pending = 0;
    }
}

static enum refine_phase phase_class(struct model *m, uint32_t name_id)
{
    if (name_id == 0)
        return REFINE_PHASE_OTHER;
    if (ensure((void **)&m->phase_class, &m->cap_phase_class, 1, name_id) != 0)
        return REFINE_PHASE_OTHER;
    if (!m->phase_class[name_id])
        m->phase_class[name_id] =
            (uint8_t)(refine_phase_class(reader_string(m->reader, name_id)) + 1);
    return (enum refine_phase)(m->phase_class[name_id] - 1);
}

/* Closes the innermost open range named `name_id` and any opened inside it (NVTX ranges can
 * be closed out of order); an unnamed pop closes the innermost one, a pop of a range that is
 * not open closes nothing. */
static void pop_phase(struct thread_phases *t, uint32_t name_id)
{
    if (name_id == 0) {
        t->depth -= t->depth > 0;
        return;
    }
    for (uint32_t d = t->depth; d-- > 0;) {
        if (t->stack[d] == name_id) {
            t->depth = d;
            return;
        }
    }
}

static void apply_phase(struct model *m, const struct mst_rec_phase *p, int push)
{
    struct thread_phases *t = thread_phases(m, p->thread);
    m->stamp.phase_seq++;
    if (!t)
        return;
    if (push) {
        if (t->depth == t->cap) {
            uint32_t cap = t->cap ? t->cap * 2 : 8;
            uint32_t *s = cap <= 4096 ? realloc(t->stack, cap * sizeof *s) : NULL;
            if (!s)
                return; /* absurdly deep nesting: keep the outer phases */
            t->stack = s;
            t->cap = cap;
        }
        t->stack[t->depth++] = p->name_id;
        if (phase_class(m, p->name_id) == REFINE_PHASE_OPTIMIZER)
            m->optimizer_seq = m->stamp.phase_seq;
    } else {
        pop_phase(t, p->name_id);
    }
}

/* ---- records ------------------------------------------------------------------------------- */

static void observe_death_now(struct model *m, const struct model_alloc *a, int at_exit)
{
    sync_phase(m);
    struct refine_life l = {
        .site = a->site,
        .size = a->size,
        .birth_step = a->step,
        .death_step = m->st.step,
        .birth_phase = phase_class(m, a->phase),
        .death_phase = phase_class(m, m->st.phase),
        .birth_seq = a->phase_seq,
        .death_seq = m->stamp.phase_seq,
        .optimizer_since_birth = m->optimizer_seq > a->phase_seq,
        .alive_at_exit = at_exit,
    };
    refine_observe(m->refine, &l);
}

static inline void observe_death(struct model *m, const struct model_alloc *a, int at_exit)
{
    if ((a->category == MST_CAT_UNKNOWN || (a->flags & MST_ALLOC_F_CAT_PHASE)) && m->refine &&
        !m->refine_apply)
        observe_death_now(m, a, at_exit);
}

static inline __attribute__((always_inline)) const struct model_alloc *
apply_alloc(struct model *m, const struct mst_rec_alloc *r, uint64_t key, uint64_t home,
            int has_room)
{
    uint8_t category = r->category, model_flags = 0;
    uint32_t site = r->site;
    const uint64_t size = r->size;
    m->st.phase = r->phase;
    m->totals.allocations++;
    m->totals.allocated_bytes += size;
    if (r->flags & MST_ALLOC_F_HOST)
        m->totals.host_allocations++;
    if (category == MST_CAT_UNKNOWN || (r->flags & MST_ALLOC_F_CAT_PHASE)) {
        m->saw_unknown = 1;
        int c = m->refine_apply ? refine_lookup(m->refine, site, size) : -1;
        if (c > 0 && c != category) {
            category = (uint8_t)c;
            model_flags |= MODEL_ALLOC_INFERRED;
            m->totals.inferred_allocations++;
            m->totals.inferred_bytes += size;
        }
    }
    if (site >= m->cap_sites && site_index(m, site) != 0)
        site = 0;
    struct site_info *info = &m->site_info[site];
    info->allocations++;
    info->allocated_bytes += size;
    info->category = category;
    info->inferred = (model_flags & MODEL_ALLOC_INFERRED) != 0;
    int existed = 0;
    struct model_alloc *s = has_room ? live_claim_at(&m->live, key, home, &existed)
                                     : live_claim(&m->live, key, &existed);
    if (!s) {
        m->step_base.allocations++; /* not the step's: see step_base */
        m->step_base.allocated_bytes += size;
        return NULL;
    }
    if (existed)
        charge(m, s, -1);    /* the missing free: the address was reused */
    memcpy(s, r, sizeof *r); /* the record's fields, in place (see SAME_FIELD) */
    s->site = site;
    s->category = category;
    s->step = m->st.step;
    s->phase_seq = m->stamp.phase_seq;
    s->residency = MODEL_RESIDENT;
    s->model_flags = model_flags;
    charge(m, s, +1);
    mark_free_path(m, s); /* after the charge, which may have named the sole device */
    return s;
}

/* `copy`: keep a copy of the freed allocation for a callback (the pool slot is reused).
 * `batched`: the index exists and `home` is the key's, and the phase of the freeing thread is
 * looked up only when something reads it (see phase_pending). */
static inline __attribute__((always_inline)) const struct model_alloc *
apply_free(struct model *m, uint32_t thread, uint64_t key, uint64_t home, int copy, int batched)
{
    int64_t pos = batched ? live_position_at(&m->live, key, home) : live_position(&m->live, key);
    if (batched)
        m->phase_pending = thread + 1;
    else
        m->st.phase = current_phase(m, thread);
    if (pos < 0) {
        m->totals.unknown_frees++;
        return NULL;
    }
    struct model_alloc *s = &m->live.items[m->live.index[pos].item - 1];
    m->totals.frees++;
    if (copy)
        m->freed = *s;
    charge(m, s, -1);
    observe_death(m, s, 0);
    live_remove_at(&m->live, pos);
    return copy ? &m->freed : s;
}

/* The current step's counts, from what the totals gained since it began (see step_base). */
static void close_step(struct model *m, struct model_step *s)
{
    s->allocations = m->totals.allocations - m->step_base.allocations;
    s->allocated_bytes = m->totals.allocated_bytes - m->step_base.allocated_bytes;
    s->frees = m->totals.frees - m->step_base.frees;
}

static void apply_step(struct model *m, const struct mst_rec_step *r)
{
    settle(m);
    if (m->nsteps) {
        struct model_step *prev = &m->steps[m->nsteps - 1];
        prev->end_ns = r->time_ns;
        prev->end_bytes = m->st.resident;
        prev->complete = 1;
        if (prev == m->cur_step)
            close_step(m, prev);
    }
    if (m->nsteps == m->cap_steps) {
        size_t cap = m->cap_steps ? m->cap_steps * 2 : 64;
        struct model_step *s = realloc(m->steps, cap * sizeof *s);
        if (!s)
            return;
        m->steps = s;
        m->cap_steps = cap;
    }
    struct model_step *s = m->cur_step = &m->steps[m->nsteps++];
    memset(s, 0, sizeof *s);
    m->step_base.allocations = m->totals.allocations;
    m->step_base.allocated_bytes = m->totals.allocated_bytes;
    m->step_base.frees = m->totals.frees;
    s->step = (int64_t)(r->step & INT64_MAX);
    s->start_ns = s->end_ns = s->peak_time_ns = r->time_ns;
    s->start_bytes = s->peak_bytes = s->end_bytes = m->st.resident;
    memcpy(s->peak_by_category, m->st.resident_by_category, sizeof s->peak_by_category);
    m->st.step = m->stamp.step = s->step;
}

static const struct model_alloc *apply_retag(struct model *m, const struct mst_rec_retag *r,
                                             int *unknown)
{
    m->totals.retags++;
    /* RETAG carries no device: look on each device the trace named, 0 first */
    struct model_alloc *s = live_find(&m->live, live_key(0, r->addr, 0));
    for (uint32_t d = 1; !s && d < reader_device_count(m->reader); d++)
        s = live_find(&m->live, live_key((uint8_t)d, r->addr, 0));
    if (!s) {
        *unknown = 1;
        return NULL;
    }
    charge(m, s, -1);
    s->category = r->category;
    s->flags &= (uint8_t)~MST_ALLOC_F_CAT_PHASE; /* a retag is evidence, not a guess */
    s->model_flags &= (uint8_t)~MODEL_ALLOC_INFERRED;
    charge(m, s, +1);
    mark_free_path(m, s);
    return s;
}

static int in_moved_range(const struct model_alloc *a, const struct mst_rec_residency *r)
{
    return a->residency != ITEM_FREE && a->device == r->device &&
           !(a->flags & MST_ALLOC_F_HANDLE) && a->addr >= r->addr && a->addr - r->addr < r->bytes;
}

/* Every live device allocation in the moved range [addr, addr + bytes) takes state `to`
 * (MODEL_KEEP: each keeps its own); the one at the lowest address is returned, NULL when the
 * range holds none. */
#define MODEL_KEEP 0xfe /* not a state: ITEM_FREE is 0xff */
static struct model_alloc *move_range(struct model *m, const struct mst_rec_residency *r,
                                      uint8_t to)
{
    struct model_alloc *first = NULL;
    for (uint32_t i = 0; i < m->live.nitems; i++) {
        struct model_alloc *a = &m->live.items[i];
        if (!in_moved_range(a, r))
            continue;
        if (to != MODEL_KEEP && to != a->residency) {
            charge(m, a, -1);
            a->residency = to;
            charge(m, a, +1);
            mark_free_path(m, a);
        }
        if (!first || a->addr < first->addr)
            first = a;
    }
    return first;
}

static const struct model_alloc *apply_residency(struct model *m, const struct mst_rec_residency *r,
                                                 int *unknown)
{
    unsigned e = r->event;
    m->totals.residency_count[e]++;
    m->totals.residency_bytes[e] += r->bytes;
    m->totals.residency_ns[e] += r->duration_ns;
    m->totals.residency_flops[e] += r->flops;
    m->st.phase = current_phase(m, r->thread);
    struct model_alloc *s = live_find(&m->live, live_key(r->device, r->addr, 0));
    /* A host use moves nothing, except that a dropped range is recomputed into host memory. */
    uint8_t to = e == MST_RES_SPILL                   ? MODEL_SPILLED
                 : e == MST_RES_DROP                  ? MODEL_DROPPED
                 : e == MST_RES_HOST_USE && !r->flops ? MODEL_KEEP
                 : e == MST_RES_HOST_USE              ? MODEL_SPILLED
                                                      : MODEL_RESIDENT;
    if ((!s || s->size < r->bytes) && r->bytes) {
        /* A chunk of small allocations moves whole: every block in it moves. */
        s = move_range(m, r, to);
        *unknown = !s;
        return s;
    }
    if (!s) {
        *unknown = 1;
        return NULL;
    }
    if (to != MODEL_KEEP && to != s->residency) {
        charge(m, s, -1);
        s->residency = to;
        charge(m, s, +1);
        mark_free_path(m, s);
    }
    return s;
}

static void apply_oom(struct model *m, const struct mst_rec_oom *r)
{
    m->totals.ooms++;
    m->st.phase = r->phase;
    uint32_t max = m->opt.max_ooms ? m->opt.max_ooms : DEFAULT_MAX_OOMS;
    if (m->nooms >= max)
        return;
    if (!m->ooms) {
        m->ooms = malloc(max * sizeof *m->ooms);
        if (!m->ooms)
            return;
    }
    m->ooms[m->nooms++] = *r;
}

/* The time of a record, or 0 for records that carry none. */
static uint64_t record_time(const struct reader_record *rec)
{
    switch (rec->kind) {
    case MST_REC_ALLOC:
    case MST_REC_FREE:
    case MST_REC_MAP:
    case MST_REC_UNMAP:
    case MST_REC_PHASE_PUSH:
    case MST_REC_PHASE_POP:
    case MST_REC_STEP:
    case MST_REC_CEILING:
    case MST_REC_OOM:
    case MST_REC_RETAG:
    case MST_REC_OP:
    case MST_REC_RESIDENCY:
    case MST_REC_MEASURE:
    case MST_REC_SUMMARY:
        /* every one of these payloads starts with time_ns */
        return rec->u.alloc.time_ns;
    default:
        return 0;
    }
}

static const struct model_alloc *apply(struct model *m, const struct reader_record *rec,
                                       int *unknown)
{
    switch (rec->kind) {
    case MST_REC_ALLOC:
        return apply_alloc(m, &rec->u.alloc,
                           live_key(rec->u.alloc.device, rec->u.alloc.addr, rec->u.alloc.flags), 0,
                           0);
    case MST_REC_FREE: {
        const struct model_alloc *a =
            apply_free(m, rec->u.free.thread,
                       live_key(rec->u.free.device, rec->u.free.addr, rec->u.free.flags), 0, 1, 0);
        *unknown = a == NULL;
        return a;
    }
    case MST_REC_PHASE_PUSH:
    case MST_REC_PHASE_POP:
        apply_phase(m, &rec->u.phase, rec->kind == MST_REC_PHASE_PUSH);
        m->st.phase = current_phase(m, rec->u.phase.thread);
        return NULL;
    case MST_REC_STEP:
        apply_step(m, &rec->u.step);
        return NULL;
    case MST_REC_CEILING:
        m->st.ceiling = rec->u.ceiling.ceiling_bytes;
        m->totals.policy = rec->u.ceiling.policy;
        if (m->st.ceiling > m->totals.ceiling)
            m->totals.ceiling = m->st.ceiling;
        return NULL;
    case MST_REC_DEVICE:
        if (rec->u.device.ceiling_bytes > m->totals.ceiling)
            m->totals.ceiling = m->st.ceiling = rec->u.device.ceiling_bytes;
        return NULL;
    case MST_REC_OOM:
        apply_oom(m, &rec->u.oom);
        return NULL;
    case MST_REC_RETAG:
        return apply_retag(m, &rec->u.retag, unknown);
    case MST_REC_RESIDENCY:
        return apply_residency(m, &rec->u.residency, unknown);
    case MST_REC_MAP:
        m->totals.maps++;
        return NULL;
    case MST_REC_UNMAP:
        m->totals.unmaps++;
        return NULL;
    case MST_REC_OP:
        m->totals.ops++;
        return NULL;
    case MST_REC_ACCESS:
        m->totals.accesses++;
        return NULL;
    case MST_REC_TENSOR_ALLOC:
        m->totals.tensor_allocs++;
        return NULL;
    default:
        return NULL;
    }
}

/* ---- replay -------------------------------------------------------------------------------- */

static int finish_live(void *ctx, const struct model_alloc *a)
{
    struct model *m = ctx;
    observe_death(m, a, 1);
    if (a->residency == MODEL_RESIDENT && !(a->flags & MST_ALLOC_F_HOST)) {
        m->totals.live_bytes_at_exit += a->size;
        m->totals.live_by_category_at_exit[a->category] += a->size;
    }
    m->totals.live_at_exit++;
    return 0;
}

static void finish(struct model *m)
{
    settle(m);
    if (m->nsteps) {
        struct model_step *s = &m->steps[m->nsteps - 1];
        s->end_ns = m->st.time_ns;
        s->end_bytes = m->st.resident;
        if (s == m->cur_step)
            close_step(m, s);
    }
    if (m->cb && m->cb->on_end && !m->stopped)
        m->cb->on_end(m->cb->ctx, m, &m->st);
    model_each_live(m, finish_live, m);
    m->totals.events = m->st.events;
}

/* Records without a time pass 0, which changes nothing. */
static inline void note_time(struct model *m, uint64_t t)
{
    /* t && (!first_ns || t < first_ns), with 0 - 1 wrapping to the largest value */
    if (t - 1 < m->totals.first_ns - 1)
        m->totals.first_ns = t;
    if (t > m->st.time_ns)
        m->st.time_ns = t;
}

/* The home of the ALLOC or FREE record at h in the live index, if it is a usual one (on the sole
 * device, at an address, not a handle: see usual_bytes), which is nearly every record. Both
 * payloads hold addr at the same place. */
static inline uint64_t ref_home(const struct model *m, const struct mst_record_header *h)
{
    _Static_assert(offsetof(struct mst_rec_alloc, addr) == offsetof(struct mst_rec_free, addr) &&
                       offsetof(struct mst_rec_free_short, addr) ==
                           offsetof(struct mst_rec_free, addr),
                   "ALLOC and FREE hold the address at the same place");
    return live_home(&m->live,
                     ((const struct mst_rec_alloc *)(const void *)(h + 1))->addr ^ m->sole_key);
}

_Static_assert(offsetof(struct site_info, inferred) == offsetof(struct site_info, category) + 1,
               "fast_alloc stores a site's category and inferred flag as one word");

/* An ALLOC as apply_alloc() applies it, for the usual one: in the short form (synchronous), of
 * a recorded category that needs no refinement, charged, on the sole device so far, from a site
 * already indexed, at an address not live. 0 (nothing changed) for any other: apply_alloc's
 * turn. `home` is ref_home() of its record, as the index and sole_key are; the index has room
 * for every record of the batch (run_batched). */
static inline __attribute__((always_inline)) int
fast_alloc(struct model *m, const struct mst_rec_alloc_short *r, uint64_t home)
{
    struct live_table *t = &m->live;
    if (!usual_bytes(m, &r->kind) || r->site >= m->cap_sites)
        return 0;
    const uint64_t key = r->addr ^ m->sole_key; /* see usual_bytes */
    uint64_t i = home;
    while (__builtin_expect(t->index[i].item != 0, 0) && t->index[i].key != key)
        i = (i + 1) & t->mask;
    if (t->index[i].item)
        return 0; /* the address was reused without a free */
    uint32_t item = live_new_item(t);
    if (item == UINT32_MAX)
        return 0;
    t->index[i] = (struct live_entry){.key = key, .item = item + 1, .home = (uint32_t)home};
    t->count++;
    struct model_alloc *s = &t->items[item];
    const uint64_t requested = r->size - r->unrequested;
    memcpy(s, r, offsetof(struct mst_rec_alloc_short, unrequested)); /* time, addr, size */
    s->requested = requested;
    s->stream = 0;
    memcpy(&s->thread, &r->thread, SHORT_ALLOC_TAIL); /* thread ... flags */
    memcpy(&s->step, &m->stamp, sizeof m->stamp);
    /* The record's fields from here on are read where they are used, after the stores above:
     * read up front, they would outlive the registers and go through the stack. */
    const uint64_t size = r->size;
    const uint32_t site = r->site;
    const uint8_t category = r->category;
    m->totals.allocations++;
    m->totals.allocated_bytes += size;
    struct site_info *info = &m->site_info[site];
    struct site_acc *sa = &info->now;
    info->allocations++;
    info->allocated_bytes += size;
    /* category, then inferred 0: one store */
    const uint16_t tag = category;
    memcpy(&info->category, &tag, sizeof tag);
    const uint64_t held = sa->bytes += size;
    sa->count++;
    if (held > info->max_bytes)
        info->max_bytes = held;
    m->st.resident += size;
    m->st.resident_requested += requested;
    m->st.resident_by_category[category] += size;
    note_increase(m, r->phase);
    return 1;
}

/* A FREE as apply_free() applies it (batched), for the usual one: of a live allocation that is
 * resident, charged, on the sole device so far, with a recorded category. 0 (nothing changed)
 * for any other, unknown addresses included: apply_free's turn. The probe starts at `home`,
 * ref_home() of the record: the key's home for the usual one; for another, from whatever slot,
 * it finds the key or gives up, and such an allocation is not usual anyway. */
static inline __attribute__((always_inline)) int fast_free(struct model *m, uint64_t key,
                                                           uint64_t home)
{
    struct live_table *t = &m->live;
    uint64_t pos = home;
    /* the key first: the slot the lookup ends at is nearly always its home, holding it */
    while (__builtin_expect(t->index[pos].key != key, 0)) {
        if (!t->index[pos].item)
            return 0;
        pos = (pos + 1) & t->mask;
    }
    const uint32_t item = t->index[pos].item;
    if (!item) /* an empty slot that held the key */
        return 0;
    /* item - 1 in 64 bits, where it joins the address arithmetic as a displacement */
    const struct model_alloc *s = t->items + ((size_t)item - 1);
    if (s->general_free) /* see mark_free_path */
        return 0;
    m->totals.frees++;
    settle(m);
    /* read after settle's stores, not kept on the stack across them */
    const uint64_t size = s->size, requested = s->requested;
    const uint32_t site = s->site;
    const uint8_t category = s->category;
    /* the site's two fields apart, around stores that may alias them: side by side the
     * compiler updates them as one vector, in four times the instructions of two subtractions */
    struct site_acc *sa = &m->site_info[site].now;
    sa->bytes -= size;
    m->st.resident -= size;
    m->st.resident_requested -= requested;
    m->st.resident_by_category[category] -= size;
    sa->count--;
    live_remove_item(t, pos, item - 1);
    return 1;
}

/* st.phase and phase_pending as the ALLOC or FREE record h leaves them (apply_alloc and
 * apply_free with `batched`), set once after a batch, for its last record: the fast paths leave
 * them alone, as only the slow paths, which set them first, and the records after the batch
 * read them (a new peak takes the phase from the record). */
static void phase_after(struct model *m, const struct mst_record_header *h)
{
    const char *payload = (const char *)(h + 1);
    uint32_t word;
    if (h->kind == MST_REC_ALLOC) {
        memcpy(&word,
               payload + (mst_alloc_is_short(h->length)
                              ? offsetof(struct mst_rec_alloc_short, phase)
                              : offsetof(struct mst_rec_alloc, phase)),
               sizeof word);
        m->st.phase = word;
        m->phase_pending = 0;
    } else {
        memcpy(&word,
               payload + (mst_free_is_short(h->length) ? offsetof(struct mst_rec_free_short, thread)
                                                       : offsetof(struct mst_rec_free, thread)),
               sizeof word);
        m->phase_pending = word + 1;
    }
}

/* The earliest time of n ALLOC and FREE records, 0 when none has a time. */
static uint64_t refs_first_ns(const struct mst_record_header *const *refs, size_t n)
{
    uint64_t earliest = UINT64_MAX; /* less one, as in note_time */
    for (size_t k = 0; k < n; k++) {
        const uint64_t time = ((const struct mst_rec_alloc *)(const void *)(refs[k] + 1))->time_ns;
        earliest = time - 1 < earliest ? time - 1 : earliest;
    }
    return earliest + 1;
}

/* The batch's other ALLOC and FREE records, out of line: inlined, their code would compete with
 * the fast paths' for registers. An ALLOC in either form, as the long one. */
static __attribute__((noinline)) void slow_alloc(struct model *m, const struct mst_record_header *h)
{
    const struct mst_rec_alloc *a = (const void *)(h + 1);
    struct mst_rec_alloc whole;
    if (mst_alloc_is_short(h->length)) {
        whole = mst_alloc_from_short((const void *)(h + 1));
        a = &whole;
    }
    m->phase_pending = 0; /* the allocation sets st.phase */
    apply_alloc(m, a, live_key(a->device, a->addr, a->flags), 0, 0);
}

static __attribute__((noinline)) void slow_free(struct model *m, uint64_t key, uint32_t thread)
{
    apply_free(m, thread, key, live_home(&m->live, key), 0, 1);
}

/* Record h of a batch, whose ref_home() is `home`: where `fast` (a constant at every call), the
 * usual ones by fast_alloc and fast_free, the others as before. Whether it took the slow path,
 * the only one that may move the homes (by growing the index or changing the sole device). */
static inline __attribute__((always_inline)) int
apply_ref(struct model *m, const struct mst_record_header *h, uint64_t home, int fast)
{
    /* Both payloads start with time_ns. A time past the latest is no new first_ns, as the
     * latest is never below first_ns once there is one (run_batched takes the first from the
     * whole batch), so the usual rising time costs one test. */
    const uint64_t time = ((const struct mst_rec_alloc *)(const void *)(h + 1))->time_ns;
    if (time > m->st.time_ns)
        m->st.time_ns = time;
    else if (time - 1 < m->totals.first_ns - 1) /* as in note_time */
        m->totals.first_ns = time;
    if (h->kind == MST_REC_ALLOC) {
        /* the short form, a synchronous allocation; one on a stream is rarer, and takes
         * apply_alloc's turn rather than a second inlined fast path */
        if (fast && mst_alloc_is_short(h->length) && fast_alloc(m, (const void *)(h + 1), home))
            return 0;
        slow_alloc(m, h);
    } else if (mst_free_is_short(h->length)) { /* the short form, a synchronous free */
        const struct mst_rec_free_short *f = (const void *)(h + 1);
        const uint64_t key = RECORD_KEY(f, 1);
        if (fast && fast_free(m, key, home))
            return 0;
        slow_free(m, key, f->thread);
    } else { /* on a stream: fewer, so not worth a second inlined fast path */
        const struct mst_rec_free *f = (const void *)(h + 1);
        slow_free(m, RECORD_KEY(f, 1), f->thread);
    }
    return 1;
}

/* Record h of a batch by the general path only: out of line, as it is rare. */
static __attribute__((noinline)) void slow_ref(struct model *m, const struct mst_record_header *h)
{
    apply_ref(m, h, 0, 0);
}

/* ref_home() of the next records of a batch, at home[k % RING] for refs[k] (see run_batched),
 * with what they were computed from. */
enum { RING = 8 };
struct home_ring {
    uint64_t home[RING];
    uint64_t sole_key;
    unsigned shift;
};

static void fill_homes(const struct model *m, const struct mst_record_header *const *refs,
                       size_t from, size_t to, struct home_ring *h)
{
    h->sole_key = m->sole_key;
    h->shift = m->live.shift;
    for (size_t k = from; k < to; k++)
        h->home[k % RING] = ref_home(m, refs[k]);
}

/* After a record that took the slow path: refs[from..to) again, if it moved the homes. */
static inline void refill_homes(const struct model *m, const struct mst_record_header *const *refs,
                                size_t from, size_t to, struct home_ring *h)
{
    if (m->live.shift != h->shift || m->sole_key != h->sole_key)
        fill_homes(m, refs, from, to, h);
}

/* Without per-event callbacks nothing can stop the replay or look at a record after it was
 * applied: ALLOC and FREE records are applied in place in the reader's buffer, in batches
 * (reader_next_refs), the usual ones by fast_alloc and fast_free, which skip the general
 * dispatch and every case they do not need; other records come one at a time. Needs the live
 * index to exist. */
static void run_batched(struct model *m)
{
    enum { BATCH = 256, AHEAD = RING };
    const struct mst_record_header *refs[BATCH];
    struct reader_record rec;
    /* The homes of the next AHEAD records, computed when their slots are fetched: a record's
     * probe then starts without waiting for its address and the multiply. */
    struct home_ring homes;
    for (;;) {
        size_t n = reader_next_refs(m->reader, refs, BATCH), i = 0;
        const size_t far = reader_fetch_ahead(m->reader);
        if (!m->totals.first_ns)
            m->totals.first_ns = refs_first_ns(refs, n); /* see apply_ref */
        /* Room in the index for the whole batch, made once here, which fast_alloc then need not
         * ask about; where the index cannot grow, the general path, which may still find room
         * as frees make it. */
        struct live_table *t = &m->live;
        if (t->count + n > t->grow_at && (live_grow_index(t) != 0 || t->count + n > t->grow_at)) {
            for (; i < n; i++)
                slow_ref(m, refs[i]);
        }
        /* The index is larger than the first-level cache and the streamed trace pushes it out
         * of the second, so a probe would otherwise wait for memory on almost every record: the
         * slot of the record AHEAD places on is fetched while this one is applied. */
        fill_homes(m, refs, 0, n < AHEAD ? n : AHEAD, &homes);
        for (size_t k = 0; k < AHEAD && k < n; k++)
            __builtin_prefetch(&m->live.index[homes.home[k]]);
        for (; i + AHEAD < n; i++) {
            const size_t slot = i % RING;
            const uint64_t home = homes.home[slot], next = ref_home(m, refs[i + AHEAD]);
            homes.home[slot] = next;
            __builtin_prefetch(&m->live.index[next]);
            /* the trace the reader reads next (reader_fetch_ahead), into the second-level
             * cache only: the replay's own lines stay in the first */
            __builtin_prefetch((const char *)refs[i] + far, 0, 1);
            if (__builtin_expect(apply_ref(m, refs[i], home, 1), 0))
                refill_homes(m, refs, i + 1, i + AHEAD + 1, &homes);
        }
        for (; i < n; i++)
            if (__builtin_expect(apply_ref(m, refs[i], homes.home[i % RING], 1), 0))
                refill_homes(m, refs, i + 1, n, &homes);
        if (n)
            phase_after(m, refs[n - 1]);
        m->st.events += n;
        if (n == BATCH)
            continue;
        if (reader_next(m->reader, &rec) != READER_RECORD)
            break;
        sync_phase(m);
        note_time(m, record_time(&rec));
        int unknown = 0;
        apply(m, &rec, &unknown);
        m->st.events++;
    }
    sync_phase(m);
}

/* A short FREE, handed to a callback as the long one: its allocation's size and site. */
static void complete_free(struct reader_record *rec, const struct model_alloc *a)
{
    if (a && rec->kind == MST_REC_FREE && mst_free_is_short(rec->length)) {
        rec->u.free.size = a->size;
        rec->u.free.site = a->site;
    }
}

static void run(struct model *m)
{
    struct reader_record rec;
    m->st.step = m->stamp.step = MODEL_NO_STEP;
    m->st.phase_name = "";
    m->peak.step = MODEL_NO_STEP;
    m->cur_step = &m->before_steps;
    set_sole_device(m, -1);
    if ((!m->cb || !m->cb->on_event) && (m->live.index || live_grow_index(&m->live) == 0))
        run_batched(m);
    while (!m->stopped && reader_next(m->reader, &rec) == READER_RECORD) {
        note_time(m, record_time(&rec));
        int unknown = 0;
        const struct model_alloc *a = apply(m, &rec, &unknown);
        m->st.events++;
        if (m->cb && m->cb->on_event) {
            complete_free(&rec, a);
            m->st.phase_name = reader_string(m->reader, m->st.phase);
            m->st.live_count = m->live.count;
            struct model_event ev = {.rec = &rec, .alloc = a, .unknown_free = unknown};
            m->stopped = m->cb->on_event(m->cb->ctx, m, &m->st, &ev) != 0;
        }
    }
    m->st.phase_name = reader_string(m->reader, m->st.phase);
    m->st.live_count = m->live.count;
    m->totals.last_ns = m->st.time_ns;
    finish(m);
}

struct source {
    const char *path;
    const void *data;
    size_t size;
};

static struct reader *open_source(const struct source *src, char *err, size_t errlen)
{
    if (src->data)
        return reader_open_memory(src->data, src->size, src->path, err, errlen);
    return reader_open(src->path, err, errlen);
}

static void reset(struct model *m)
{
    struct model keep = *m;
    live_free(&m->live);
    free(m->steps);
    free(m->ooms);
    free(m->site_at_peak);
    free(m->site_info);
    for (uint32_t i = 0; i < m->cap_threads; i++)
        free(m->threads[i].stack);
    free(m->threads);
    free(m->phase_class);
    reader_close(m->reader);
    memset(m, 0, sizeof *m);
    m->opt = keep.opt;
    m->refine = keep.refine;
    m->sym = keep.sym;
    m->lines = keep.lines; /* freed by model_free, like sym */
    m->lines_tried = keep.lines_tried;
}

static struct model *replay(const struct source *src, const struct model_options *opt,
                            const struct model_callbacks *cb, char *err, size_t errlen)
{
    struct model *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    m->opt = opt ? *opt : (struct model_options){0};
    int two_pass = m->opt.refine;
    if (two_pass)
        m->refine = refine_new();
    m->cb = two_pass ? NULL : cb;
    m->reader = open_source(src, err, errlen);
    if (!m->reader) {
        model_free(m);
        return NULL;
    }
    run(m);
    if (!two_pass || !m->refine)
        return m;
    refine_decide(m->refine, m->st.step);
    if (!cb && (!m->saw_unknown || refine_inferred_keys(m->refine) == 0))
        return m; /* nothing to infer and nobody waiting for events: one pass was enough */
    reset(m);
    m->cb = cb;
    m->refine_apply = 1;
    m->reader = open_source(src, err, errlen);
    if (!m->reader) {
        model_free(m);
        return NULL;
    }
    run(m);
    return m;
}

struct model *model_replay(const char *path, const struct model_options *opt,
                           const struct model_callbacks *cb, char *err, size_t errlen)
{
    struct source src = {.path = path};
    return replay(&src, opt, cb, err, errlen);
}

struct model *model_replay_memory(const void *data, size_t size, const char *name,
                                  const struct model_options *opt, const struct model_callbacks *cb,
                                  char *err, size_t errlen)
{
    struct source src = {.path = name ? name : "(memory)", .data = data, .size = size};
    return replay(&src, opt, cb, err, errlen);
}

void model_free(struct model *m)
{
    if (!m)
        return;
    for (uint32_t i = 0; i < m->cap_frame_names; i++)
        free(m->frame_names[i]);
    free(m->frame_names);
    free(m->site_list);
    reset(m);
    refine_free(m->refine);
    symbolizer_free(m->sym);
    dwarf_lines_free(m->lines);
    free(m);
}

/* ---- queries ------------------------------------------------------------------------------- */

const struct model_alloc *model_find(const struct model *m, uint8_t device, uint64_t addr)
{
    return live_find(&m->live, live_key(device, addr, 0));
}
