/* residency_range: what residency's parts share (private to shim/policy/): the range record, the
 * state and counters they all read, and each part's functions. residency.c holds the state, the
 * API and the allocation paths; residency_table.c the sorted table of ranges and the per-thread
 * pins; residency_moves.c spill, restore and making room; residency_recompute.c dropping a GEMM
 * output and computing it again. Everything here runs with res_lock held unless it says not. */
#ifndef MEMSHIM_RESIDENCY_RANGE_H
#define MEMSHIM_RESIDENCY_RANGE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "backing.h"
#include "compat.h"
#include "lineage.h"
#include "nextuse.h"
#include "victim.h"

/* The ranges one operation uses that are made resident and pinned: as many as access.c passes
 * (a PyTorch foreach kernel names over a hundred tensors), so that none of them moves while the
 * call is in flight. */
#define RES_PINS 128

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
    uint16_t ndropped;   /* chunk away: its blocks dropped with it (their lineages say which) */
    struct lineage *lin; /* how to recompute it (own ranges only); NULL: no valid one */
    struct backing_chunk *chunk; /* NULL: one allocation's own range */
    struct res_range *next_free;
    uint64_t nu_key, nu_pred; /* its forecast's identity (nextuse.h) */
};

struct res_pin {
    struct res_range *r;
    uint64_t gen;
};

/* ---- residency.c: the state ---- */

extern pthread_mutex_t res_lock;
extern int res_remat;                /* recompute or auto: GEMM outputs may be dropped */
extern int res_auto;                 /* auto: victims ranked and freed by measured cost */
extern struct res_range **res_table; /* sorted by addr */
extern struct victim_candidate *res_cands;
extern size_t res_count, res_cap;
extern struct res_range *res_free_list;
extern uint64_t res_tick;
extern uint64_t res_op_peak;  /* the most bytes of ranges one operation has used at once */
extern struct nextuse res_nu; /* forecasts of next uses, from the previous step */
extern _Atomic uint64_t res_spills, res_restores, res_spilled_bytes, res_restored_bytes, res_drops,
    res_recomputes, res_dropped_bytes, res_recompute_flops, res_access_ooms;
extern int res_remat_logged;
extern MS_TLS struct res_pin res_pins[RES_PINS];
extern MS_TLS unsigned res_npins;
extern pthread_key_t res_exit_key;
extern int res_exit_key_ok;

void res_log_once(const char *what, int rc);
/* Whether a range may be used where it is, in host memory (MEMSHIM_HOST_USE and host VMM). */
int res_host_usable(int device);
/* Count r as used in host memory (logged at the first). */
void res_host_used(const struct res_range *r);
/* r usable by a call: restored, recomputed (depth: of the chain so far), or used in host memory
 * where the device has no room for it. -1 when none of these can be done. */
int res_make_usable(struct res_range *r, int depth);

/* ---- residency_table.c ---- */

struct res_range *res_find(uint64_t addr);
struct res_range *res_new(void);
int res_insert(struct res_range *r);
void res_forget(struct res_range *r);
void res_remove(struct res_range *r);
void res_unpin_thread(void);
void res_pin(struct res_range *r);

/* ---- residency_moves.c ---- */

void res_record_flops(uint8_t event, const struct res_range *r, uint64_t t0, uint64_t flops);
void res_record(uint8_t event, const struct res_range *r, uint64_t t0);
void res_record_at(uint8_t event, const struct res_range *r, uint64_t addr, uint64_t bytes,
                   uint64_t t0, uint64_t flops);
void res_rehost(uint64_t bytes);
/* A restore that failed once its device room was reserved: the room given back, its bytes
 * counted on the host again (res_rehost), rc logged once. Returns -1. */
int res_restore_failed(int device, uint64_t bytes, int rc);
void res_device_out(struct res_range *r);
void res_device_in(struct res_range *r);
void res_settle_retag(int device, uint8_t kept, uint8_t now, uint64_t bytes);
int res_spill(struct res_range *r);
int res_restore(struct res_range *r);
int res_make_room_locked(int device, uint64_t need);

/* ---- residency_recompute.c ---- */

enum res_act { RES_ACT_SPILL, RES_ACT_DROP };
int res_droppable(const struct res_range *r);
enum res_act res_action(const struct res_range *r, const struct victim_candidate *c);
int res_drop(struct res_range *r);
int res_recompute(struct res_range *r, int depth);
/* The distinct ranges a replay of l into r needs on the device: r first, then those holding
 * the GEMM's inputs and workspace (a chunk once, however many of them it holds). */
size_t res_replay_ranges(struct res_range *r, const struct lineage *l,
                         struct res_range *out[LINEAGE_MAX_IN + 2]);
/* A range whose GEMM is replayed, and its inputs: marked in_call meanwhile. */
struct res_replay_guard {
    struct res_range *r[LINEAGE_MAX_IN + 2];
    uint8_t was[LINEAGE_MAX_IN + 2];
    size_t n;
};
int res_replay_guard(struct res_replay_guard *g, struct res_range *r, const struct lineage *l,
                     int depth);
void res_replay_unguard(struct res_replay_guard *g);
int res_before_write(uint64_t base, int force);
int res_depth_down(const struct lineage *l, int budget);
int res_depth_up(uint64_t out, int budget);

/* ---- residency_blocks.c: GEMM outputs that are blocks of a chunk ---- */

struct lineage *res_lin_of(uint64_t base);
int res_out_dropped(const struct lineage *l);
/* Whether dropping l's output would chain it to a block dropped with its chunk (an input of it,
 * or reading it): such chains are not made (res_droppable, residency_blocks.c). */
int res_block_chained(const struct lineage *l);
int res_bring_back(struct lineage *l, int depth);
void res_block_forget(struct res_range *r, uint64_t addr);
uint64_t res_chunk_cost(struct res_range *r);
int res_chunk_evict(struct res_range *r, int by_cost);
int res_chunk_fill(struct res_range *r);
int res_block_replay(struct res_range *r, struct lineage *l, int depth);

#endif /* MEMSHIM_RESIDENCY_RANGE_H */
