/* Replay model: the state of a traced process at every event, and what it added up to.
 *
 * model_replay() streams one trace through the reader and keeps, at every record, the live
 * allocations (address -> allocation), resident/spilled/dropped bytes by category, the open
 * phase and the current step. A caller that wants per-event output (timeline, exports) passes
 * callbacks; after the replay the model answers queries: peak, per-step peaks, sites, OOMs,
 * what was alive at exit. Memory is bounded by live state and the number of sites, never by
 * the length of the trace.
 *
 * With `refine` set, `unknown` allocations get a category inferred from their lifetime
 * (refine.h): a first pass learns the lifetimes, the second pass replays with the inferred
 * categories, and callbacks see only the second pass. Inferred allocations carry
 * MODEL_ALLOC_INFERRED, and reports say so.
 *
 * Stable interface for reports and exports: add fields and functions, never change them.
 */
#ifndef ANALYZE_MODEL_H
#define ANALYZE_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "reader.h"

#define MODEL_NO_STEP (-1) /* events before the first STEP record */

enum model_residency {
    MODEL_RESIDENT = 0, /* on the device, charged */
    MODEL_SPILLED = 1,  /* moved to host memory by the shim */
    MODEL_DROPPED = 2,  /* freed by the shim, to be recomputed on next use */
};

#define MODEL_ALLOC_INFERRED (1u << 0) /* category inferred by lifetime, not recorded */

struct model_alloc {
    /* These first fields mirror struct mst_rec_alloc, so an ALLOC record is copied in one go. */
    uint64_t time_ns; /* when it was allocated */
    uint64_t addr;    /* device address, or handle with MST_ALLOC_F_HANDLE */
    uint64_t size;    /* bytes charged */
    uint64_t requested;
    uint64_t stream;
    uint32_t thread;  /* allocating thread id */
    uint32_t site;    /* innermost frame id, 0 without stacks */
    uint32_t phase;   /* STRING id of the phase it was allocated in, 0 if none */
    uint8_t kind;     /* enum mst_alloc_kind */
    uint8_t category; /* recorded or inferred category */
    uint8_t device;
    uint8_t flags; /* MST_ALLOC_F_* as recorded */
    /* The model's own. */
    int64_t step;        /* step it was allocated in, MODEL_NO_STEP before the first */
    uint32_t phase_seq;  /* model's phase-change counter at allocation (refinement) */
    uint8_t residency;   /* enum model_residency */
    uint8_t model_flags; /* MODEL_ALLOC_* */
    /* The replay's own: nonzero when a FREE of it takes the general path (model.c). */
    uint8_t general_free;
};

/* State after the current record was applied. */
struct model_state {
    uint64_t time_ns;       /* time of the latest timed record */
    int64_t step;           /* current step, MODEL_NO_STEP before the first */
    uint32_t phase;         /* STRING id of the innermost open phase of the record's thread */
    const char *phase_name; /* its name, "" if none */
    uint64_t resident;      /* bytes charged on all devices */
    uint64_t resident_by_category[MST_CATEGORY_MAX];
    uint64_t spilled;
    uint64_t spilled_by_category[MST_CATEGORY_MAX];
    uint64_t dropped;
    uint64_t dropped_by_category[MST_CATEGORY_MAX];
    uint64_t live_count; /* live allocations */
    uint64_t ceiling;    /* ceiling in force, 0 = none */
    uint64_t events;     /* records applied so far */
    /* resident bytes whose category was inferred (MODEL_ALLOC_INFERRED), by category */
    uint64_t inferred_by_category[MST_CATEGORY_MAX];
    /* Of resident, the bytes the program asked for. */
    uint64_t resident_requested;
};

/* What one record did. `alloc` is the allocation it concerns (for FREE a copy of the freed
 * one, taken before removal; for RETAG after the change; for RESIDENCY after the move), or
 * NULL when the record concerns no known allocation. */
struct model_event {
    const struct reader_record *rec;
    const struct model_alloc *alloc;
    int unknown_free; /* a FREE (or RESIDENCY/RETAG) of an address the model did not know */
};

struct model;

struct model_callbacks {
    void *ctx;
    /* After each record is applied. Return nonzero to stop the replay early. */
    int (*on_event)(void *ctx, const struct model *m, const struct model_state *st,
                    const struct model_event *ev);
    /* After the last record, before live-at-exit accounting; optional. */
    void (*on_end)(void *ctx, const struct model *m, const struct model_state *st);
};

struct model_options {
    int refine;        /* infer categories of `unknown` allocations by lifetime */
    uint32_t max_ooms; /* OOM records kept for queries (all are counted); 0 = 1024 */
};

/* Replays one trace. Returns the model (query it, then model_free), or NULL when the file
 * cannot be opened or is not a trace (message in err). A corrupt record ends the replay at
 * that record: the model holds everything before it and model_reader_status() says why. */
struct model *model_replay(const char *path, const struct model_options *opt,
                           const struct model_callbacks *cb, char *err, size_t errlen);
struct model *model_replay_memory(const void *data, size_t size, const char *name,
                                  const struct model_options *opt, const struct model_callbacks *cb,
                                  char *err, size_t errlen);
void model_free(struct model *m);

/* The reader of the last pass: header, definition tables, status. Valid until model_free. */
const struct reader *model_reader(const struct model *m);
enum reader_state model_reader_status(const struct model *m);
const char *model_reader_error(const struct model *m);
const struct model_state *model_state(const struct model *m);

/* Live allocation lookup during or after the replay (after: what was alive at exit). */
const struct model_alloc *model_find(const struct model *m, uint8_t device, uint64_t addr);
/* Calls fn for every live allocation, in no particular order; stops on nonzero. */
void model_each_live(const struct model *m, int (*fn)(void *ctx, const struct model_alloc *a),
                     void *ctx);

struct model_peak {
    uint64_t bytes; /* highest resident bytes */
    uint64_t time_ns;
    int64_t step;
    uint32_t phase; /* STRING id */
    uint64_t by_category[MST_CATEGORY_MAX];
    uint64_t live_count;
    uint64_t inferred_by_category[MST_CATEGORY_MAX]; /* the part of by_category inferred */
    /* Bytes asked for by the allocations resident at the peak. */
    uint64_t requested;
};
const struct model_peak *model_peak(const struct model *m);

struct model_step {
    int64_t step;         /* step number from the STEP record */
    uint64_t start_ns;    /* time of its STEP record */
    uint64_t end_ns;      /* time of the next STEP record, or of the last event */
    int complete;         /* another STEP record followed */
    uint64_t start_bytes; /* resident at its start */
    uint64_t peak_bytes;  /* highest resident during the step (at least start_bytes) */
    uint64_t peak_time_ns;
    uint64_t peak_by_category[MST_CATEGORY_MAX];
    uint64_t end_bytes;
    uint64_t allocations, frees;
    uint64_t allocated_bytes;
};
/* Steps in trace order; *n set to their number. */
const struct model_step *model_steps(const struct model *m, size_t *n);
/* The steady-state step: the last complete step, else the last one; NULL without steps. */
const struct model_step *model_steady_step(const struct model *m);

struct model_totals {
    uint64_t events;        /* records applied */
    uint64_t allocations;   /* ALLOC records */
    uint64_t frees;         /* FREE records of known allocations */
    uint64_t unknown_frees; /* FREE records of addresses not live in the model */
    uint64_t allocated_bytes;
    uint64_t host_allocations; /* MST_ALLOC_F_HOST: recorded, not charged */
    uint64_t maps, unmaps;
    uint64_t ooms;
    uint64_t retags;
    uint64_t ops, accesses;
    uint64_t tensor_allocs; /* TENSOR_ALLOC records (tensors inside a caching allocator) */
    uint64_t residency_count[MST_RES_LAST + 1]; /* by enum mst_residency_event */
    uint64_t residency_bytes[MST_RES_LAST + 1];
    uint64_t residency_ns[MST_RES_LAST + 1];
    uint64_t residency_flops[MST_RES_LAST + 1]; /* RECOMPUTE, and HOST_USE into host memory */
    uint64_t live_at_exit;                      /* allocations alive at the end */
    uint64_t live_bytes_at_exit;
    uint64_t live_by_category_at_exit[MST_CATEGORY_MAX];
    uint64_t inferred_allocations; /* allocations whose category was inferred */
    uint64_t inferred_bytes;
    uint64_t first_ns, last_ns; /* times of the first and last timed record */
    uint64_t ceiling;           /* highest ceiling seen (header device or CEILING record) */
    uint8_t policy;             /* policy of the last CEILING record */
};
const struct model_totals *model_totals(const struct model *m);

/* Per device: the highest resident bytes on that device alone, and when. The process peak
 * (model_peak) is over all devices together; a job that fits needs each device's peak to fit
 * its GPU. `used` is 0 for devices no allocation named. */
struct model_device_peak {
    int used;
    uint64_t bytes;
    uint64_t time_ns;
    int64_t step;
};
const struct model_device_peak *model_device_peak(const struct model *m, uint8_t device);

/* OOM records in trace order (at most options.max_ooms of them); totals.ooms counts all. */
const struct mst_rec_oom *model_ooms(const struct model *m, size_t *n);

struct model_site {
    uint32_t site;    /* innermost frame id, 0 = no stack recorded */
    uint8_t category; /* category of its latest allocation */
    uint8_t inferred; /* that category was inferred */
    uint64_t allocations;
    uint64_t allocated_bytes;
    uint64_t bytes_at_peak; /* resident bytes from this site at the process peak */
    uint64_t count_at_peak;
    uint64_t max_bytes;     /* the most it ever held resident at once */
    uint64_t bytes_at_exit; /* still alive at exit */
    uint64_t count_at_exit;
};
/* All sites that allocated, in no particular order. Call after the replay: the list is built
 * on the first call and kept. */
const struct model_site *model_sites(const struct model *m, size_t *n);

/* Frames of a site, innermost (most specific) first, demangled and symbolized offline where the
 * trace lacks a name ("symbol+0xoff (module)" or "module+0xoff"). Writes up to `max` pointers
 * into out, returns how many. The strings live until model_free. */
size_t model_site_frames(struct model *m, uint32_t site, const char **out, size_t max);
/* One frame, formatted as above. */
const char *model_frame_name(struct model *m, uint32_t frame_id);

#endif /* ANALYZE_MODEL_H */
