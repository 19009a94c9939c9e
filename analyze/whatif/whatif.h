/* `whatif`: what a recorded run would cost under a smaller memory ceiling.
 *
 *     memshim-analyze whatif TRACE|DIR... --limit 24g[,16g,...] [--sweep [N]] [--svg FILE]
 *                            [--device N] [--link-gbps G] [--tflops T]
 *                            [--costs h2d=R,d2h=R,gemm=R] [--json]
 *
 * The trace's allocations, frees and accesses (OP/ACCESS records, MEMSHIM_ACCESS) are loaded
 * once into a compact event list, then replayed under each ceiling by three eviction policies
 * over the same cost model (README, "memshim-analyze whatif"):
 *
 *   min   Belady's MIN on bytes: at a shortfall, evict the bytes whose next use is farthest,
 *         possibly part of a buffer. Any policy that moves whole buffers is a feasible schedule
 *         of this relaxed problem, so its traffic is a lower bound on theirs (MIN is optimal for
 *         unit-size pages, and every byte is one here).
 *   lru   whole buffers, least recently used first.
 *   shim  whole buffers, and whole chunks of small ones, chosen by the shim's own
 *         victim_choose() (shim/victim.h), when the analyzer was built with it.
 *
 * and a recompute variant of MIN: GEMM outputs whose lineage is still valid are dropped and
 * recomputed (their GEMM's FLOPs) instead of being moved.
 *
 *   auto  MEMSHIM_POLICY=auto as the shim decides it: charged and ticked as `shim`, victims
 *         chosen by victim_choose_dtr (DTR's score), each either spilled or dropped and
 *         recomputed, whichever costs less at the rates of whatif_set_costs (by default the
 *         trace's MEASURE record for the device, else 50 GB/s each way and 400 TFLOP/s). A
 *         victim can be recomputed when its next use could replay the GEMM that wrote it (the
 *         lineage the `recompute` variant uses). Reported apart from the three traffic
 *         policies: it also spends FLOPs. */
#ifndef ANALYZE_WHATIF_H
#define ANALYZE_WHATIF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "json.h"

enum whatif_policy { WHATIF_MIN = 0, WHATIF_LRU = 1, WHATIF_SHIM = 2, WHATIF_POLICIES = 3 };

/* Bytes moved by one policy: device to host at evictions, host to device at reloads. */
struct whatif_traffic {
    uint64_t d2h, h2d;
    uint64_t evictions, loads; /* events (MIN: partial buffers count once per event) */
    uint64_t failures;         /* shim: allocations victim_choose could not make room for
                                  (the call fails with out-of-memory; the replay goes on) */
    uint64_t host_uses;        /* shim: ranges an op needed that it could not make room for:
                                  used in host memory where they are (MEMSHIM_HOST_USE) */
};

/* The MIN schedule with GEMM outputs dropped and recomputed instead of moved. */
struct whatif_recompute {
    uint64_t flops;       /* GEMM FLOPs replayed */
    uint64_t recomputes;  /* reloads served by a replay */
    uint64_t moved_bytes; /* what still had to be moved (d2h + h2d): not recomputable */
};

/* The auto policy: what it moved and what it recomputed. */
struct whatif_auto {
    struct whatif_traffic t; /* spilled victims: out at eviction, back at their next use */
    uint64_t drops;          /* victims dropped to be recomputed */
    uint64_t dropped_bytes;
    uint64_t recomputes; /* reloads served by replaying a GEMM */
    uint64_t flops;      /* their FLOPs */
};

/* A step slot: everything between two STEP records (slot 0 holds what came before the first
 * STEP, with step = -1). */
struct whatif_step {
    int64_t step;
    uint64_t peak; /* resident bytes as recorded (no ceiling) */
    struct whatif_traffic t[WHATIF_POLICIES];
    struct whatif_recompute r;
    struct whatif_auto a;
};

struct whatif_result {
    uint64_t limit;
    int fits;          /* peak as recorded <= limit: nothing moves */
    int feasible;      /* limit >= the smallest workable ceiling; else nothing below is computed */
    int shim_feasible; /* limit >= the smallest ceiling at the shim's charges (granules, chunks):
                          below it the shim and auto replays fail */
    int have_shim;     /* also: the auto policy was replayed (both need shim/victim.c) */
    struct whatif_traffic t[WHATIF_POLICIES];
    struct whatif_recompute r;
    struct whatif_auto a;
    size_t nsteps;
    struct whatif_step *steps; /* owned; step slots without events are kept (peak 0) */
};

/* What the trace says, for the chosen device. */
struct whatif_info {
    int device;
    uint64_t peak;           /* resident bytes as recorded, highest */
    uint64_t min_ceiling;    /* smallest ceiling any policy can work under */
    uint64_t min_ceiling_op; /* the OP record (1-based, in trace order) where it is reached,
                                0 = at an allocation */
    /* The same at the shim's charges: own ranges in whole granules, blocks in whole chunks
     * (whatif_set_shim); what the shim can reach, as the sizes asked for are not mapped alone */
    uint64_t shim_min_ceiling, shim_min_ceiling_op;
    uint64_t ops, accesses;
    uint64_t untracked_accesses; /* alloc_addr 0, or an address not live on this device */
    uint64_t buffers;            /* allocations on this device */
    uint64_t unobserved;         /* of them, never touched by an op: kept resident */
    uint64_t unobserved_max;     /* bytes of those alive at once, highest */
    uint64_t recomputable_uses;  /* uses whose buffer a GEMM could replay */
    double gemm_flops_per_s;     /* from MST_REC_MEASURE, 0 when none */
    /* The chosen device's latest MST_REC_MEASURE (0: none, or not measured) */
    uint64_t measured_h2d, measured_d2h, measured_gemm;
    /* The rates the auto policy uses (whatif_set_costs) */
    uint64_t auto_h2d, auto_d2h, auto_gemm;
    uint8_t auto_from[3];        /* each: 0 default, 1 measured, 2 option */
    uint64_t spill_min, granule; /* as set by whatif_set_shim */
    int no_host_use;             /* whatif_set_host_use(t, 0): shortfalls of an op fail */
    int has_accesses;            /* the header says access tracking was on, or OPs exist */
    int status;                  /* enum reader_state of the load */
    const char *error;           /* reader message when status != OK */
    const char *path;
};

struct whatif_trace;

/* Loads a trace (file or memory). `device` < 0 picks the device with the highest peak. NULL
 * with a message when the file cannot be read at all; a damaged tail ends the load there. */
struct whatif_trace *whatif_load(const char *path, int device, char *err, size_t errlen);
struct whatif_trace *whatif_load_memory(const void *data, size_t size, const char *name, int device,
                                        char *err, size_t errlen);
void whatif_free(struct whatif_trace *t);
const struct whatif_info *whatif_info(const struct whatif_trace *t);

/* How the `shim` replay charges allocations, as residency.c under MEMSHIM_POLICY=spill:
 * cudaMalloc/cuMemAlloc below `spill_min` (MEMSHIM_SPILL_MIN, default 2 MiB) are buddy blocks
 * in shared chunks, placed as the shim's buddy allocator places them, and a chunk is spilled
 * and restored whole (one victim candidate; a block's use brings its chunk back; no new block
 * goes into a chunk that is away; a chunk emptied while away is never brought back); the
 * others get their own range, rounded up to `granule` (the device's VMM granularity, 2 MiB on
 * current GPUs and simcuda). spill_min 0 and granule 1: every buffer its own range at its
 * size, as MIN and LRU. */
#define WHATIF_SPILL_MIN (2ull << 20)
#define WHATIF_GRANULE   (2ull << 20)
void whatif_set_shim(struct whatif_trace *t, uint64_t spill_min, uint64_t granule);
/* Whether the `shim` and `auto` replays use in host memory a range an op needs back and has no
 * room for, as the shim does on a device with host VMM (MEMSHIM_HOST_USE, the default), or
 * count it as an out-of-memory failure (a device without host VMM, or MEMSHIM_HOST_USE=off). */
void whatif_set_host_use(struct whatif_trace *t, int on);

/* The auto policy's rates (bytes/s each way, FLOP/s); a 0 keeps the trace's measurement for
 * the device, or the default when the trace has none. */
#define WHATIF_AUTO_LINK 50000000000ull     /* 50 GB/s */
#define WHATIF_AUTO_GEMM 400000000000000ull /* 400 TFLOP/s */
void whatif_set_costs(struct whatif_trace *t, uint64_t h2d, uint64_t d2h, uint64_t gemm);

/* Replays under `limit` bytes. 0, or -1 when out of memory. */
int whatif_simulate(const struct whatif_trace *t, uint64_t limit, struct whatif_result *out);
void whatif_result_free(struct whatif_result *r);

/* Total traffic (d2h + h2d) of one policy. */
static inline uint64_t whatif_bytes(const struct whatif_traffic *t)
{
    return t->d2h + t->h2d;
}

/* "24g", "1.5GiB", "512m", "4096": bytes, binary suffixes as MEMSHIM_LIMIT. -1 if malformed. */
int whatif_parse_size(const char *s, uint64_t *out);

/* The `whatif` command (commands.h). */
int whatif_command(int argc, char **argv);

#endif /* ANALYZE_WHATIF_H */
