/* whatif_trace: the trace as the whatif replays read it (whatif_load.c builds it, whatif.c
 * replays it); private to analyze/whatif/. */
#ifndef ANALYZE_WHATIF_TRACE_H
#define ANALYZE_WHATIF_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include <stdlib.h>

#include <memshim/trace_format.h>

#include "whatif.h"

typedef unsigned long long ull;

#define NONE           UINT32_MAX
#define NEVER          UINT64_MAX
#define OP_MAX_TOUCHED 4096 /* distinct allocations one op can name (kernel params) */

enum { EV_ALLOC, EV_FREE, EV_OP };

/* The load keeps one event per ALLOC and FREE and one buffer per ALLOC of the trace, so both
 * are kept small: the event's kind rides in the top bits of its step slot, and what only the
 * load needs of a buffer lives beside the live ones alone (whatif_load.c). */
#define EV_KIND_SHIFT 30
#define SLOT_MAX      ((1u << EV_KIND_SHIFT) - 1)

struct ev {
    uint32_t id;        /* buffer (ALLOC, FREE) or op index */
    uint32_t slot_kind; /* step slot, kind << EV_KIND_SHIFT */
};

static inline unsigned ev_kind(const struct ev *v)
{
    return v->slot_kind >> EV_KIND_SHIFT;
}

static inline uint32_t ev_slot(const struct ev *v)
{
    return v->slot_kind & SLOT_MAX;
}

/* One allocation, from its ALLOC to its FREE: an address reused later is a new buffer. */
struct buf {
    uint64_t size;
    uint64_t requested; /* what the program asked for (the shim's charge derives from it) */
    uint32_t first_use; /* use index of its first use, NONE if never used */
    uint32_t live; /* while loading: its entry among the live buffers' state, NONE once freed */
    uint8_t device;
    uint8_t kind; /* enum mst_alloc_kind */
};

struct op {
    uint32_t first, n; /* its distinct buffers: uses[first .. first + n) */
    uint32_t ev;       /* event index */
    uint64_t seq;      /* 1-based number of its OP record in the trace */
};

/* One buffer touched by one op. */
struct use {
    uint32_t buf;
    uint32_t next;  /* use index of the buffer's next use, NONE if none before its free */
    uint64_t flops; /* reloading it here by replaying its GEMM costs this; 0 = must be moved */
    uint8_t mode;   /* MST_ACCESS_* of all the op's ranges in it */
};

struct whatif_trace {
    struct ev *ev;
    size_t nev, cap_ev;
    struct buf *buf;
    size_t nbuf, cap_buf;
    struct op *op;
    size_t nop, cap_op;
    struct use *use;
    size_t nuse, cap_use;
    int64_t *slot_step;
    size_t nslot, cap_slot;
    uint64_t *slot_peak; /* for the chosen device */
    uint64_t device_peak[256];
    uint64_t spill_min, granule;
    uint64_t measure[256][3]; /* each device's latest MEASURE record: h2d, d2h, gemm */
    uint64_t costs[3];        /* whatif_set_costs: h2d, d2h, gemm; 0 = measured or default */
    struct whatif_info info;
    char path[1024];
    char error[512];
};

/* Room for one more element of a growing array (doubling; 0, or -1 when out of memory). */
static inline int whatif_grow(void **p, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 256;
    void *q = realloc(*p, c * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

/* whatif.c: how the shim charges buffer b (its own range, or a buddy block of `chunk` bytes:
 * *block > 0), the shim's chunk size, and its smallest workable ceiling (info.shim_min_ceiling,
 * recomputed whenever whatif_set_shim changes the charges). */
void whatif_shim_charge(const struct whatif_trace *t, uint32_t b, uint64_t chunk, uint64_t *charge,
                        uint64_t *block);
uint64_t whatif_chunk_bytes(const struct whatif_trace *t);
void whatif_shim_bound(struct whatif_trace *t);

#define PUSH(t, arr, n, cap) whatif_grow((void **)&(t)->arr, &(t)->cap, (t)->n, sizeof *(t)->arr)

#endif /* ANALYZE_WHATIF_TRACE_H */
