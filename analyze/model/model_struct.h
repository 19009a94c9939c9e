/* model_struct: the replay model's record (private to analyze/model/), shared by its parts: the
 * replay itself (model.c), the queries over what it built (model_query.c) and the naming of
 * stack frames (model_frames.c). */
#ifndef ANALYZE_MODEL_STRUCT_H
#define ANALYZE_MODEL_STRUCT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

#define ITEM_FREE 0xff /* model_alloc.residency of a pool item not in use */

/* Live allocations: an open-addressing index (linear probing, backward-shift deletion, no
 * tombstones) of 16-byte entries, small enough to stay in cache, pointing into a pool of
 * allocation records reused through a free list. */
struct live_entry {
    uint64_t key;  /* live_key() */
    uint32_t item; /* index into items plus one; 0 marks an empty slot */
    uint32_t home; /* live_home() of key, kept so a deletion moves entries without rehashing */
};

struct live_table {
    struct live_entry *index;
    uint64_t mask;  /* index capacity - 1 */
    unsigned shift; /* 64 - log2(capacity) */
    uint64_t count; /* live allocations: st.live_count, copied there when it is read */
    /* Count at which the index doubles: it stays at most a quarter full, where a lookup probes
     * 1.2 slots on average even for a live set just under the mark (half full: 1.6), for 16
     * more bytes of index per live allocation, beside its 72-byte item. */
    uint64_t grow_at;
    struct model_alloc *items; /* a free one has residency ITEM_FREE */
    uint32_t nitems, cap_items;
    /* Free items form a stack threaded through the items themselves: index + 1 of the top,
     * 0 when empty; a free item's `site` holds the one below it. */
    uint32_t free_top;
};

struct site_acc {
    uint64_t bytes, count; /* resident now */
};

/* A site's figures side by side, so that an allocation finds them at one address. */
struct site_info {
    struct site_acc now;
    uint64_t allocations, allocated_bytes, max_bytes;
    uint8_t category, inferred;
};

struct thread_phases {
    uint32_t *stack;
    uint32_t depth, cap;
};

struct model {
    struct model_options opt;
    const struct model_callbacks *cb;
    struct reader *reader;
    struct model_state st;
    struct live_table live;
    struct model_peak peak;
    unsigned dirty; /* DIRTY_*: a peak whose breakdown is still to be copied (see the top) */
    struct model_totals totals;
    struct model_step *steps;
    size_t nsteps, cap_steps;
    /* steps[nsteps - 1]; before the first step, before_steps, which nothing reports: the
     * replay then tracks a step peak without first asking whether there is a step. */
    struct model_step *cur_step;
    struct model_step before_steps;
    /* The totals when the current step began: its allocations, bytes and frees are what the
     * totals gained since, filled in when it closes (close_step), not counted twice per event.
     * An allocation the model failed to keep moves the base, as it was never counted. */
    struct {
        uint64_t allocations, allocated_bytes, frees;
    } step_base;
    struct mst_rec_oom *ooms;
    size_t nooms;
    /* sites, indexed by frame id */
    struct site_acc *site_at_peak;
    struct site_info *site_info;
    uint32_t cap_sites;
    struct model_site *site_list;
    size_t site_list_len;
    /* phases */
    struct thread_phases *threads;
    uint32_t cap_threads;
    /* What a new live item takes from the model, laid out as the item's tail (step, phase_seq,
     * residency, model_flags) so that fast_alloc copies it in one go: step mirrors st.step,
     * phase_seq is the model's phase-change counter. */
    struct alloc_stamp {
        int64_t step;
        uint32_t phase_seq;
        uint8_t residency, model_flags, general_free; /* MODEL_RESIDENT, 0, 0 */
    } stamp;
    uint32_t optimizer_seq;
    /* The batched replay does not look up the phase of a FREE's thread, which only the next
     * reader of st.phase (sync_phase) needs: thread id + 1 of the latest such FREE, 0 if none.
     * Its fast paths set neither this nor st.phase: phase_after does, once a batch. */
    uint32_t phase_pending;
    uint8_t *phase_class; /* by string id: enum refine_phase + 1, 0 = not computed */
    uint32_t cap_phase_class;
    /* refinement: observing (first pass) or applying (second pass) */
    struct refine *refine;
    int refine_apply;
    int saw_unknown;
    /* frame names */
    struct symbolizer *sym;
    struct dwarf_lines *lines;
    int lines_tried;
    char **frame_names;
    uint32_t cap_frame_names;
    struct model_alloc freed; /* copy handed to callbacks for FREE */
    /* Per device. While every charge has been on one device (sole_device), that device's
     * figures are the process's (st.resident, peak) and are not kept twice: they are copied
     * out when a second device appears, or when asked for. */
    int sole_device;           /* -1: none charged yet, or several */
    uint32_t sole_device_bits; /* sole_device where usual_bytes() finds it; see set_sole_device */
    uint64_t sole_key;         /* live_key(sole_device, addr, 0) ^ addr; 0 without one */
    int several_devices;
    uint64_t device_resident[256];
    struct model_device_peak device_peak[256];
    int stopped;
};

/* ---- growable arrays ----------------------------------------------------------------------- */

/* Grows *arr (of `width`-byte items, *cap of them) to hold index `i`, zeroing the new part. */
static inline int ensure(void **arr, uint32_t *cap, size_t width, uint64_t i)
{
    if (i < *cap)
        return 0;
    if (i >= (1u << 30))
        return -1;
    uint32_t n = *cap ? *cap : 64;
    while (n <= i)
        n *= 2;
    void *p = realloc(*arr, (size_t)n * width);
    if (!p)
        return -1;
    memset((char *)p + (size_t)*cap * width, 0, (size_t)(n - *cap) * width);
    *arr = p;
    *cap = n;
    return 0;
}

#endif /* ANALYZE_MODEL_STRUCT_H */
