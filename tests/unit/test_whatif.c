/* `whatif`: traffic under hypothetical ceilings, on synthetic traces whose answer is known by
 * hand; MIN <= LRU and MIN <= the shim's policy on every case; the command as users call it. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_capture.h"
#include "tracegen.h"
#include "whatif.h"

#define M          (1ull << 20)
#define NEVER_COST UINT64_MAX

/* ---- building traces ----------------------------------------------------------------------- */

struct tb {
    struct tracegen *g;
    uint32_t thread, name;
    uint64_t now;
};

static void tb_start(struct tb *b)
{
    struct tracegen_header h = {.pid = 7, .rank = MST_NO_RANK, .flags = MST_FILE_F_ACCESSES};
    b->g = tracegen_new_memory(&h);
    cr_assert(b->g);
    b->thread = tracegen_thread(b->g, 100, "main");
    b->name = tracegen_string(b->g, "op");
    tracegen_device(b->g, 0, "Synthetic GPU", 80ull << 30, 0);
    b->now = 1000;
}

/* Buffers are named by a small number; its address is derived from it. */
static uint64_t addr_of(int id)
{
    return (uint64_t)(id + 1) << 32;
}

static void tb_alloc(struct tb *b, int id, uint64_t size)
{
    tracegen_malloc(b->g, b->now++, b->thread, addr_of(id), size, MST_CAT_ACTIVATION, 0, 0);
}

static void tb_free(struct tb *b, int id)
{
    tracegen_dealloc(b->g, b->now++, b->thread, addr_of(id));
}

static void tb_step(struct tb *b, uint64_t step)
{
    tracegen_step(b->g, b->now++, b->thread, step);
}

/* An op touching ids[0..n) in mode[i] (NULL: all read). */
static void tb_op_modes(struct tb *b, uint8_t kind, uint64_t flops, int n, const int *ids,
                        const uint8_t *mode)
{
    struct mst_rec_op op = {.time_ns = b->now++,
                            .flops = flops,
                            .thread = b->thread,
                            .name_id = b->name,
                            .naccess = (uint32_t)n,
                            .kind = kind,
                            .dtype_a = 0xff,
                            .dtype_b = 0xff,
                            .dtype_c = 0xff};
    tracegen_op(b->g, &op);
    for (int i = 0; i < n; i++)
        tracegen_access(b->g, addr_of(ids[i]) + 16, 64, addr_of(ids[i]),
                        mode ? mode[i] : MST_ACCESS_READ);
}

/* A kernel reading the buffers in the list (terminated by -1). */
static void tb_use(struct tb *b, ...)
{
    int ids[16], n = 0;
    va_list ap;
    va_start(ap, b);
    for (int id; (id = va_arg(ap, int)) >= 0 && n < 16;)
        ids[n++] = id;
    va_end(ap);
    tb_op_modes(b, MST_OP_KERNEL, 0, n, ids, NULL);
}

static struct whatif_trace *tb_load(struct tb *b)
{
    size_t size;
    const void *data = tracegen_data(b->g, &size);
    char err[256];
    struct whatif_trace *t = whatif_load_memory(data, size, "synthetic", -1, err, sizeof err);
    cr_assert(t, "%s", err);
    whatif_set_shim(t, 0, 1); /* every buffer its own range: the policies compare like for like */
    return t;
}

/* ---- invariants every result must satisfy -------------------------------------------------- */

static void check(const struct whatif_trace *t, const struct whatif_result *r)
{
    const struct whatif_traffic *min = &r->t[WHATIF_MIN], *lru = &r->t[WHATIF_LRU],
                                *shim = &r->t[WHATIF_SHIM];
    cr_assert(r->have_shim, "the analyzer is built with shim/victim.c");
    cr_expect_leq(whatif_bytes(min), whatif_bytes(lru), "MIN %llu > LRU %llu at %llu",
                  (unsigned long long)whatif_bytes(min), (unsigned long long)whatif_bytes(lru),
                  (unsigned long long)r->limit);
    if (shim->failures == 0) /* a failed call moves nothing */
        cr_expect_leq(whatif_bytes(min), whatif_bytes(shim), "MIN > shim at %llu",
                      (unsigned long long)r->limit);
    cr_expect_eq(min->failures + lru->failures, 0);
    /* MIN copies out only what it reads back later */
    cr_expect_eq(min->d2h, min->h2d);
    /* an online policy reloads only what it evicted */
    cr_expect_geq(lru->d2h, lru->h2d);
    cr_expect_geq(shim->d2h, shim->h2d);
    if (r->fits || !r->feasible) /* the shim's replay charges chunks: it may still move */
        for (int p = 0; p < WHATIF_POLICIES; p++)
            cr_expect(whatif_bytes(&r->t[p]) == 0 ||
                          (p == WHATIF_SHIM && r->feasible && whatif_info(t)->granule > 1),
                      "policy %d moved at a ceiling that fits", p);
    struct whatif_traffic sum[WHATIF_POLICIES] = {0};
    for (size_t i = 0; i < r->nsteps; i++)
        for (int p = 0; p < WHATIF_POLICIES; p++) {
            sum[p].d2h += r->steps[i].t[p].d2h;
            sum[p].h2d += r->steps[i].t[p].h2d;
        }
    for (int p = 0; p < WHATIF_POLICIES; p++) {
        cr_expect_eq(sum[p].d2h, r->t[p].d2h);
        cr_expect_eq(sum[p].h2d, r->t[p].h2d);
    }
    cr_expect_eq(r->fits, whatif_info(t)->peak <= r->limit);
    /* auto: spills reload only what they copied out, replays only what was dropped */
    const struct whatif_auto *a = &r->a;
    cr_expect_geq(a->t.d2h, a->t.h2d);
    cr_expect_leq(a->recomputes, a->drops);
    cr_expect_eq(a->flops > 0, a->recomputes > 0);
    if (!r->feasible || (r->fits && whatif_info(t)->granule == 1))
        cr_expect_eq(whatif_bytes(&a->t) + a->drops, 0, "auto moved at a ceiling that fits");
    struct whatif_auto as = {0};
    for (size_t i = 0; i < r->nsteps; i++) {
        as.t.d2h += r->steps[i].a.t.d2h;
        as.t.h2d += r->steps[i].a.t.h2d;
        as.drops += r->steps[i].a.drops;
        as.flops += r->steps[i].a.flops;
    }
    cr_expect_eq(as.t.d2h, a->t.d2h);
    cr_expect_eq(as.t.h2d, a->t.h2d);
    cr_expect_eq(as.drops, a->drops);
    cr_expect_eq(as.flops, a->flops);
}

static void sim(const struct whatif_trace *t, uint64_t limit, struct whatif_result *r)
{
    cr_assert_eq(whatif_simulate(t, limit, r), 0);
    check(t, r);
}

#define expect_policy(r, p, d2h_, h2d_)                                                            \
    do {                                                                                           \
        cr_expect_eq((r).t[p].d2h, (d2h_), #p " d2h %llu", (unsigned long long)(r).t[p].d2h);      \
        cr_expect_eq((r).t[p].h2d, (h2d_), #p " h2d %llu", (unsigned long long)(r).t[p].h2d);      \
    } while (0)

/* ---- known answers ------------------------------------------------------------------------- */

Test(whatif, fits_moves_nothing)
{
    struct tb b;
    tb_start(&b);
    tb_alloc(&b, 0, 2 * M);
    tb_alloc(&b, 1, 3 * M);
    struct mst_rec_op untracked = {
        .time_ns = b.now++, .thread = b.thread, .naccess = 1, .kind = MST_OP_MEMSET};
    tracegen_op(b.g, &untracked);
    tracegen_access(b.g, 0x1000, 64, 0, MST_ACCESS_WRITE); /* memory the shim does not track */
    tb_use(&b, 0, 1, -1);
    tb_free(&b, 0);
    tb_use(&b, 1, -1);
    struct whatif_trace *t = tb_load(&b);
    const struct whatif_info *in = whatif_info(t);
    cr_expect_eq(in->peak, 5 * M);
    cr_expect_eq(in->min_ceiling, 5 * M); /* the second op touches both */
    cr_expect_eq(in->min_ceiling_op, 2);
    cr_expect_eq(in->ops, 3);
    cr_expect_eq(in->accesses, 4);
    cr_expect_eq(in->untracked_accesses, 1);
    struct whatif_result r;
    sim(t, 5 * M, &r);
    cr_expect(r.fits && r.feasible);
    whatif_result_free(&r);
    sim(t, 5 * M - 1, &r);
    cr_expect(!r.fits && !r.feasible, "below the working set of op 1 nothing can work");
    whatif_result_free(&r);
    whatif_free(t);
    tracegen_free(b.g);
}

/* The shim maps whole granules and whole chunks: two 2.25 MiB buffers and two of 100 KiB used
 * by one op need 4 + 4 + 2 MiB mapped, not the 4.7 MiB asked; below that the shim's replay says
 * the ceiling is not workable with every range on the device, and the op uses the one it has no
 * room for in host memory (MEMSHIM_HOST_USE) rather than failing. */
Test(whatif, shim_bound_counts_granules_and_chunks)
{
    struct tb b;
    tb_start(&b);
    tb_alloc(&b, 0, 9 * M / 4);
    tb_alloc(&b, 1, 9 * M / 4);
    tb_alloc(&b, 2, 100 << 10);
    tb_alloc(&b, 3, 100 << 10);
    tb_use(&b, 0, 1, 2, 3, -1);
    struct whatif_trace *t = tb_load(&b);
    whatif_set_shim(t, WHATIF_SPILL_MIN, WHATIF_GRANULE);
    const struct whatif_info *in = whatif_info(t);
    cr_expect_eq(in->min_ceiling, 9 * M / 2 + (200 << 10));
    cr_expect_eq(in->shim_min_ceiling, 10 * M);
    cr_expect_eq(in->shim_min_ceiling_op, 1);
    struct whatif_result r;
    sim(t, 10 * M, &r);
    cr_expect(r.shim_feasible);
    cr_expect_eq(r.t[WHATIF_SHIM].failures, 0);
    cr_expect_eq(r.t[WHATIF_SHIM].host_uses, 0);
    whatif_result_free(&r);
    sim(t, 10 * M - 1, &r);
    cr_expect(r.feasible && !r.shim_feasible);
    cr_expect_eq(r.t[WHATIF_SHIM].failures, 0, "every allocation found room");
    cr_expect_eq(r.t[WHATIF_SHIM].host_uses, 1, "the op's evicted range stayed in host memory");
    whatif_result_free(&r);
    whatif_set_host_use(t, 0); /* a device without host VMM: the op fails instead */
    sim(t, 10 * M - 1, &r);
    cr_expect_gt(r.t[WHATIF_SHIM].failures, 0, "the replay fails where the bound says so");
    cr_expect_eq(r.t[WHATIF_SHIM].host_uses, 0);
    whatif_set_host_use(t, 1);
    whatif_result_free(&r);
    whatif_set_shim(t, 0, 1);
    cr_expect_eq(in->shim_min_ceiling, in->min_ceiling, "charged at their sizes: the same bound");
    whatif_free(t);
    tracegen_free(b.g);
}

/* Three equal buffers read in a cycle under room for two: LRU's worst case (every access
 * misses), while MIN misses every other access. Worked out in the README. */
Test(whatif, cyclic_lru_worst_case)
{
    struct tb b;
    tb_start(&b);
    for (int i = 0; i < 3; i++)
        tb_alloc(&b, i, M);
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 3; i++)
            tb_use(&b, i, -1);
    struct whatif_trace *t = tb_load(&b);
    cr_expect_eq(whatif_info(t)->min_ceiling, M);
    struct whatif_result r;
    sim(t, 2 * M, &r);
    /* MIN: B out at C's allocation; misses at ops 2, 4, 6, 8; the last eviction (A, dead) free */
    expect_policy(r, WHATIF_MIN, 4 * M, 4 * M);
    /* LRU: all 9 accesses miss; 10 evictions, each copied out */
    expect_policy(r, WHATIF_LRU, 10 * M, 9 * M);
    /* equal sizes: the shim's large-first rule is plain LRU */
    expect_policy(r, WHATIF_SHIM, 10 * M, 9 * M);
    cr_expect_eq(r.t[WHATIF_LRU].loads, 9);
    whatif_result_free(&r);
    whatif_free(t);
    tracegen_free(b.g);
}

/* Every eviction is forced (one candidate) and every victim is used again, so the three
 * policies make the same moves and MIN = LRU = shim. */
Test(whatif, forced_choices_coincide)
{
    struct tb b;
    tb_start(&b);
    tb_alloc(&b, 0, M);
    tb_alloc(&b, 1, M); /* evicts A: used again */
    tb_use(&b, 0, -1);  /* evicts B: used again */
    tb_free(&b, 0);
    tb_use(&b, 1, -1); /* room from the free */
    struct whatif_trace *t = tb_load(&b);
    struct whatif_result r;
    sim(t, M, &r);
    for (int p = 0; p < WHATIF_POLICIES; p++)
        expect_policy(r, p, 2 * M, 2 * M);
    whatif_result_free(&r);
    whatif_free(t);
    tracegen_free(b.g);
}

/* Same, with a longer ping-pong and step slots: equality, and per-step attribution. */
Test(whatif, ping_pong_per_step)
{
    struct tb b;
    tb_start(&b);
    tb_alloc(&b, 0, M);
    tb_alloc(&b, 1, M); /* slot 0: A out */
    for (int s = 0; s < 3; s++) {
        tb_step(&b, (uint64_t)s);
        tb_use(&b, 0, -1); /* B out, A in */
        tb_use(&b, 1, -1); /* A out, B in */
    }
    tb_step(&b, 3);
    tb_use(&b, 0, -1); /* B out (used again), A in */
    tb_free(&b, 0);
    tb_use(&b, 1, -1); /* B in, room from the free */
    struct whatif_trace *t = tb_load(&b);
    struct whatif_result r;
    sim(t, M, &r);
    cr_assert_eq(r.nsteps, 5);
    cr_expect_eq(r.steps[0].step, -1);
    for (int p = 0; p < WHATIF_POLICIES; p++) {
        expect_policy(r, p, 8 * M, 8 * M); /* out: 1 + 3*2 + 1; in: 3*2 + 2 */
        cr_expect_eq(r.steps[0].t[p].d2h, M);
        cr_expect_eq(r.steps[0].t[p].h2d, 0);
        for (int s = 1; s <= 3; s++) {
            cr_expect_eq(r.steps[s].step, s - 1);
            cr_expect_eq(r.steps[s].t[p].d2h, 2 * M);
            cr_expect_eq(r.steps[s].t[p].h2d, 2 * M);
        }
        cr_expect_eq(r.steps[4].t[p].d2h, M);
        cr_expect_eq(r.steps[4].t[p].h2d, 2 * M);
    }
    whatif_result_free(&r);
    whatif_free(t);
    tracegen_free(b.g);
}

/* MIN works on bytes: it takes 1 MiB of the big buffer used last instead of a whole buffer.
 * LRU evicts the small buffer it needs next, then the big one. */
Test(whatif, partial_eviction_of_the_farthest)
{
    struct tb b;
    tb_start(&b);
    tb_alloc(&b, 0, 9 * M); /* A */
    tb_alloc(&b, 1, M);     /* B */
    tb_use(&b, 1, -1);
    tb_use(&b, 0, -1);
    tb_alloc(&b, 2, M); /* C: 1 MiB short */
    tb_use(&b, 2, -1);
    tb_use(&b, 1, -1);
    tb_use(&b, 0, -1);
    struct whatif_trace *t = tb_load(&b);
    struct whatif_result r;
    sim(t, 10 * M, &r);
    expect_policy(r, WHATIF_MIN, M, M);
    expect_policy(r, WHATIF_LRU, 11 * M, 10 * M);
    expect_policy(r, WHATIF_SHIM, 11 * M, 10 * M);
    whatif_result_free(&r);
    whatif_free(t);
    tracegen_free(b.g);
}

/* The shim prefers one large victim to a small older one (victim.h rule 3); MIN evicts the
 * dead buffers for free. */
Test(whatif, shim_prefers_large_min_drops_dead)
{
    struct tb b;
    tb_start(&b);
    tb_alloc(&b, 0, M);     /* A */
    tb_alloc(&b, 1, 8 * M); /* B */
    tb_alloc(&b, 2, M);     /* C */
    tb_use(&b, 0, -1);
    tb_use(&b, 1, -1);
    tb_use(&b, 2, -1);
    tb_alloc(&b, 3, 8 * M); /* D: 8 MiB short */
    tb_use(&b, 3, -1);
    tb_use(&b, 0, -1);
    struct whatif_trace *t = tb_load(&b);
    struct whatif_result r;
    sim(t, 10 * M, &r);
    expect_policy(r, WHATIF_MIN, 0, 0);      /* B and C are never used again */
    expect_policy(r, WHATIF_LRU, 9 * M, M);  /* A then B out; A back */
    expect_policy(r, WHATIF_SHIM, 8 * M, 0); /* B alone; A stays */
    whatif_result_free(&r);
    whatif_free(t);
    tracegen_free(b.g);
}

/* Below MEMSHIM_SPILL_MIN an allocation is a block in a chunk, and the chunk moves whole: the
 * shim spills the chunk (2 MiB for a 1 MiB block) where it would spill a buffer of its own. */
Test(whatif, shim_spills_chunks_whole)
{
    struct tb b;
    tb_start(&b);
    tb_alloc(&b, 0, M);     /* S: small */
    tb_alloc(&b, 1, 4 * M); /* L1 */
    tb_use(&b, 0, -1);
    tb_use(&b, 1, -1);
    tb_alloc(&b, 2, 4 * M); /* L2: 1 MiB short at 8 MiB */
    tb_use(&b, 2, -1);
    struct whatif_trace *t = tb_load(&b);
    struct whatif_result r;
    sim(t, 8 * M, &r);
    expect_policy(r, WHATIF_SHIM, M, 0); /* S, least recently used, is large enough */
    whatif_result_free(&r);
    whatif_set_shim(t, 2 * M, 1);
    cr_expect_eq(whatif_info(t)->spill_min, 2 * M);
    sim(t, 8 * M, &r);
    /* S's chunk is 2 MiB: 6 MiB charged, 2 MiB short at L2; the chunk is older than L1 */
    expect_policy(r, WHATIF_SHIM, 2 * M, 0);
    cr_expect_eq(r.t[WHATIF_SHIM].failures, 0);
    cr_expect_eq(r.t[WHATIF_SHIM].evictions, 1);
    whatif_result_free(&r);
    /* at 4 MiB: the chunk out for L1; S's use brings it back (L1 out), L1's use takes it out
     * again, L2 takes L1's place */
    sim(t, 4 * M, &r);
    cr_expect(r.feasible);
    expect_policy(r, WHATIF_SHIM, 12 * M, 6 * M);
    cr_expect_eq(r.t[WHATIF_SHIM].failures, 0);
    cr_expect_eq(r.t[WHATIF_SHIM].evictions, 4);
    cr_expect_eq(r.t[WHATIF_SHIM].loads, 2);
    cr_expect_eq(r.t[WHATIF_LRU].failures, 0);
    whatif_result_free(&r);
    whatif_free(t);
    tracegen_free(b.g);
}

/* The shim charges own ranges rounded to the granularity and small allocations as blocks in
 * whole chunks: it spills at a ceiling the recorded sizes fit under. */
Test(whatif, shim_charges_granules_and_chunks)
{
    struct tb b;
    tb_start(&b);
    for (int i = 0; i < 3; i++)
        tb_alloc(&b, i, M); /* three 1 MiB blocks: two 2 MiB chunks */
    tb_alloc(&b, 3, 3 * M); /* L1: a 4 MiB range */
    tb_use(&b, 0, 1, 2, 3, -1);
    tb_alloc(&b, 4, 3 * M); /* L2: 2 MiB short at 10 MiB */
    tb_use(&b, 4, -1);
    tb_use(&b, 3, -1);
    struct whatif_trace *t = tb_load(&b);
    struct whatif_result r;
    sim(t, 10 * M, &r);
    cr_expect(r.fits); /* 9 MiB recorded */
    expect_policy(r, WHATIF_SHIM, 0, 0);
    whatif_result_free(&r);
    whatif_set_shim(t, 2 * M, 2 * M);
    sim(t, 10 * M, &r);
    /* 2 MiB short at L2: the chunk of blocks 0 and 1 is the least recently used candidate */
    expect_policy(r, WHATIF_SHIM, 2 * M, 0);
    expect_policy(r, WHATIF_MIN, 0, 0);
    cr_expect_eq(r.t[WHATIF_SHIM].failures, 0);
    whatif_result_free(&r);
    whatif_free(t);
    tracegen_free(b.g);
}

/* Many small buffers in two chunks under MEMSHIM_SPILL_MIN: each chunk is one candidate and
 * moves whole, a block's use brings its whole chunk back, a new block never goes into a chunk
 * that is away (a new chunk is made), and a chunk whose blocks are all freed while it is away
 * is never brought back. The replay before chunks could spill packed the blocks into chunks
 * that stayed on the device: the 4 MiB buffer found no victim at all (a failure, nothing
 * moved). */
Test(whatif, shim_small_buffers_spill_chunks)
{
    struct tb b;
    tb_start(&b);
    for (int i = 0; i < 8; i++) /* chunk A: 0-3, chunk B: 4-7 */
        tb_alloc(&b, i, M / 2);
    tb_use(&b, 1, 2, 3, 5, 6, 7, -1);
    tb_use(&b, 0, -1);
    tb_use(&b, 4, -1);
    tb_alloc(&b, 10, 4 * M); /* L: 2 MiB short, A (least recent) goes */
    tb_use(&b, 10, -1);
    tb_free(&b, 1);         /* a hole in A while it is away */
    tb_alloc(&b, 8, M / 2); /* its ticket spills B; not into A (away): a new chunk C */
    tb_use(&b, 8, -1);
    tb_free(&b, 0);
    tb_free(&b, 2);
    tb_free(&b, 3);     /* A emptied while away: its host copy is just freed */
    tb_use(&b, 5, -1);  /* B back, whole: L (older than C) out */
    tb_use(&b, 10, -1); /* L back: C (older than B) out */
    struct whatif_trace *t = tb_load(&b);
    whatif_set_shim(t, 2 * M, 2 * M);
    struct whatif_result r;
    sim(t, 6 * M, &r);
    cr_expect(r.feasible && !r.fits);
    const struct whatif_traffic *sh = &r.t[WHATIF_SHIM];
    expect_policy(r, WHATIF_SHIM, 10 * M, 6 * M); /* out: A, B, L, C; in: B, L */
    cr_expect_eq(sh->evictions, 4);
    cr_expect_eq(sh->loads, 2);
    cr_expect_eq(sh->failures, 0);
    whatif_result_free(&r);
    whatif_free(t);
    tracegen_free(b.g);
}

/* The replay runs the buddy allocator: 1 MiB free in a chunk as two 512 KiB holes that are not
 * buddies is no room for a 1 MiB block, which takes a new chunk (perfect packing would have
 * fitted it, and nothing would have moved). */
Test(whatif, shim_chunk_holes_are_not_room)
{
    struct tb b;
    tb_start(&b);
    for (int i = 0; i < 4; i++) /* chunk A: 0-3 */
        tb_alloc(&b, i, M / 2);
    tb_use(&b, 0, 1, 2, 3, -1);
    tb_free(&b, 1);
    tb_free(&b, 2);     /* [512K, 1.5M) free: not one 1 MiB block */
    tb_alloc(&b, 4, M); /* chunk B */
    tb_use(&b, 4, -1);
    tb_alloc(&b, 5, 2 * M); /* L, an own range: 2 MiB short, A goes */
    tb_use(&b, 5, -1);
    tb_use(&b, 0, -1); /* A back: B (older than L) out */
    struct whatif_trace *t = tb_load(&b);
    whatif_set_shim(t, 2 * M, 2 * M);
    struct whatif_result r;
    sim(t, 4 * M, &r);
    expect_policy(r, WHATIF_SHIM, 4 * M, 2 * M);
    cr_expect_eq(r.t[WHATIF_SHIM].failures, 0);
    whatif_result_free(&r);
    /* a granularity no device has (not a power of two): 2 MiB rounds to 3 MiB, the chunk is
     * the power of two above, 4 MiB, and holds every block; L is a 3 MiB range. A out for L,
     * A back and L out for it */
    whatif_set_shim(t, 2 * M, 3 * M / 2);
    sim(t, 5 * M, &r);
    expect_policy(r, WHATIF_SHIM, 7 * M, 4 * M);
    cr_expect_eq(r.t[WHATIF_SHIM].failures, 0);
    whatif_result_free(&r);
    whatif_set_shim(t, UINT64_MAX, 3000); /* everything a block, chunks as large as they go */
    sim(t, 4 * M, &r);
    whatif_result_free(&r);
    whatif_free(t);
    tracegen_free(b.g);
}

/* A buffer no op ever touches cannot be moved (nothing says when it is needed): it stays
 * resident and raises the smallest workable ceiling. */
Test(whatif, unobserved_buffers_stay_resident)
{
    struct tb b;
    tb_start(&b);
    tb_alloc(&b, 9, 4 * M); /* never accessed */
    tb_alloc(&b, 0, M);
    tb_alloc(&b, 1, M);
    tb_use(&b, 1, -1);
    tb_use(&b, 0, -1);
    struct whatif_trace *t = tb_load(&b);
    const struct whatif_info *in = whatif_info(t);
    cr_expect_eq(in->unobserved, 1);
    cr_expect_eq(in->unobserved_max, 4 * M);
    cr_expect_eq(in->min_ceiling, 5 * M);
    struct whatif_result r;
    sim(t, 5 * M, &r);
    cr_expect(r.feasible && !r.fits);
    /* alloc B: A out (used again); op B: hit; op A: B out (dead for MIN), A in */
    expect_policy(r, WHATIF_MIN, M, M);
    expect_policy(r, WHATIF_LRU, 2 * M, M);
    whatif_result_free(&r);
    whatif_free(t);
    tracegen_free(b.g);
}

/* GEMM output Y = X*W is evicted and read later: dropping and replaying the GEMM replaces its
 * copies, as long as X and W still hold what the GEMM read. */
static struct whatif_trace *gemm_trace(struct tb *b, int variant)
{
    tb_start(b);
    int x = 0, w = 1, y = 2, z = 3;
    tb_alloc(b, x, M);
    tb_alloc(b, w, M);
    int xw[] = {x, w};
    uint8_t wr[] = {MST_ACCESS_WRITE, MST_ACCESS_WRITE};
    tb_op_modes(b, MST_OP_KERNEL, 0, 2, xw, wr); /* fill the inputs */
    tb_alloc(b, y, 4 * M);
    int g[] = {x, w, y};
    uint8_t gm[] = {MST_ACCESS_READ, MST_ACCESS_READ,
                    variant == 3 ? MST_ACCESS_READ | MST_ACCESS_WRITE : MST_ACCESS_WRITE};
    tb_op_modes(b, MST_OP_GEMM, 1000000000ull, 3, g, gm);
    if (variant == 1) {
        uint8_t w1[] = {MST_ACCESS_WRITE};
        tb_op_modes(b, MST_OP_KERNEL, 0, 1, &x, w1); /* an input changes */
    }
    tb_alloc(b, z, 4 * M); /* 4 MiB short at a 6 MiB ceiling */
    tb_use(b, z, -1);
    if (variant == 2)
        tb_free(b, w); /* an input is gone */
    tb_use(b, y, -1);
    tb_use(b, x, -1);
    return tb_load(b);
}

Test(whatif, recompute_gemm_output)
{
    struct tb b;
    struct whatif_trace *t = gemm_trace(&b, 0);
    cr_expect_eq(whatif_info(t)->recomputable_uses, 1);
    struct whatif_result r;
    sim(t, 6 * M, &r);
    /* at Z: W dead (free), X (used last) out, then 2 MiB of Y; at Y: Z dead, Y back; at X:
     * dead ones make room, X back. Recompute: Y is replayed, X still moves (2 x 1 MiB). */
    expect_policy(r, WHATIF_MIN, 3 * M, 3 * M);
    cr_expect_eq(r.r.flops, 1000000000ull);
    cr_expect_eq(r.r.recomputes, 1);
    cr_expect_eq(r.r.moved_bytes, 2 * M);
    whatif_result_free(&r);
    whatif_free(t);
    tracegen_free(b.g);
}

Test(whatif, recompute_needs_a_valid_lineage)
{
    for (int variant = 1; variant <= 3; variant++) {
        struct tb b;
        struct whatif_trace *t = gemm_trace(&b, variant);
        cr_expect_eq(whatif_info(t)->recomputable_uses, 0, "variant %d", variant);
        struct whatif_result r;
        sim(t, 6 * M, &r);
        cr_expect_eq(r.r.flops, 0, "variant %d", variant);
        cr_expect_eq(r.r.moved_bytes, whatif_bytes(&r.t[WHATIF_MIN]), "variant %d", variant);
        cr_expect_gt(r.r.moved_bytes, 0);
        whatif_result_free(&r);
        whatif_free(t);
        tracegen_free(b.g);
    }
}

/* ---- the auto policy: DTR victims, each spilled or recomputed, whichever costs less ---------- */

/* gemm_trace at 6 MiB, recompute cheap (1e9 FLOP at 1000 TFLOP/s: 1 ms; spilling Y's 4 MiB at
 * 1 GB/s each way: 8.4 ms). Ticks: X 6, W 7, Y 8 after the GEMM.
 *   alloc Z (4 MiB short, now 8): X has a next use (a kernel: spill, 2.1 ms), W none (spill),
 *     Y's next use can replay the GEMM (1 ms). Scores per MiB: Y 1/(4*1) = 0.25,
 *     X 2.1/(1*3) = 0.7, W 2.1/(1*2) = 1.05: Y alone covers 4 MiB and is dropped.
 *   use Y (now 11; 4 MiB short): X 2.1/6 = 0.35, W 2.1/5 = 0.42, Z (no next use: spill,
 *     8.4 ms) 8.4/(4*2) = 1.05: X, W, then Z (2 MiB are not enough). Y replayed.
 *   use X: 1 MiB back, room enough. */
Test(whatif, auto_drops_the_cheap_gemm_output)
{
    struct tb b;
    struct whatif_trace *t = gemm_trace(&b, 0);
    whatif_set_costs(t, 1000000000ull, 1000000000ull, 1000000000000000ull);
    const struct whatif_info *in = whatif_info(t);
    cr_expect_eq(in->auto_gemm, 1000000000000000ull);
    cr_expect_eq(in->auto_from[0], 2);
    struct whatif_result r;
    sim(t, 6 * M, &r);
    cr_expect_eq(r.a.drops, 1);
    cr_expect_eq(r.a.dropped_bytes, 4 * M);
    cr_expect_eq(r.a.recomputes, 1);
    cr_expect_eq(r.a.flops, 1000000000ull);
    cr_expect_eq(r.a.t.d2h, 6 * M, "X, W and Z spilled");
    cr_expect_eq(r.a.t.evictions, 3);
    cr_expect_eq(r.a.t.h2d, M, "X back; Y recomputed, not copied");
    cr_expect_eq(r.a.t.failures, 0);
    whatif_result_free(&r);
    whatif_free(t);
    tracegen_free(b.g);
}

/* The same trace with the GEMM rate low (1 GFLOP/s: 1 s) and the link fast (1 TB/s): spilling
 * is cheaper for every victim, so auto only spills.
 *   alloc Z (now 8): costs 2098, 2098, 8390 ns; per MiB X 699, W 1049, Y 2098: X, W, then Y.
 *   use Y (4 MiB short: Z alone, 4 MiB, spilled); Y back 4 MiB; X back 1 MiB. */
Test(whatif, auto_spills_when_recompute_is_dearer)
{
    struct tb b;
    struct whatif_trace *t = gemm_trace(&b, 0);
    whatif_set_costs(t, 1000000000000ull, 1000000000000ull, 1000000000ull);
    struct whatif_result r;
    sim(t, 6 * M, &r);
    cr_expect_eq(r.a.drops, 0);
    cr_expect_eq(r.a.flops, 0);
    cr_expect_eq(r.a.t.d2h, 10 * M);
    cr_expect_eq(r.a.t.h2d, 5 * M);
    whatif_result_free(&r);
    whatif_free(t);
    tracegen_free(b.g);
}

/* A buffer whose lineage is broken is never dropped, however cheap its GEMM. */
Test(whatif, auto_recomputes_only_valid_lineage)
{
    for (int variant = 1; variant <= 3; variant++) {
        struct tb b;
        struct whatif_trace *t = gemm_trace(&b, variant);
        whatif_set_costs(t, 1000000, 1000000, UINT64_MAX);
        struct whatif_result r;
        sim(t, 6 * M, &r);
        cr_expect_eq(r.a.drops, 0, "variant %d", variant);
        cr_expect_eq(r.a.flops, 0, "variant %d", variant);
        cr_expect_gt(r.a.t.d2h, 0, "variant %d", variant);
        whatif_result_free(&r);
        whatif_free(t);
        tracegen_free(b.g);
    }
}

/* Rates: the device's MEASURE record, a 0 from it or from the option keeps the next source. */
Test(whatif, auto_rates_from_trace_option_default)
{
    struct tb b;
    tb_start(&b);
    tracegen_measure(b.g, 5, 7000000000ull, 0, 3000000000000ull);
    tracegen_measure(b.g, 6, 0, 9000000000ull, 0); /* a later record adds what it knows */
    tb_alloc(&b, 0, M);
    tb_use(&b, 0, -1);
    struct whatif_trace *t = tb_load(&b);
    const struct whatif_info *in = whatif_info(t);
    cr_expect_eq(in->measured_h2d, 7000000000ull);
    cr_expect_eq(in->measured_d2h, 9000000000ull);
    cr_expect_eq(in->measured_gemm, 3000000000000ull);
    cr_expect_eq(in->auto_h2d, 7000000000ull);
    cr_expect_eq(in->auto_from[0], 1);
    whatif_set_costs(t, 0, 1, 0);
    cr_expect_eq(in->auto_h2d, 7000000000ull, "0 keeps the measurement");
    cr_expect_eq(in->auto_d2h, 1);
    cr_expect_eq(in->auto_from[1], 2);
    whatif_free(t);
    tracegen_free(b.g);

    tb_start(&b);
    tb_alloc(&b, 0, M);
    t = tb_load(&b);
    in = whatif_info(t);
    cr_expect_eq(in->auto_h2d, WHATIF_AUTO_LINK);
    cr_expect_eq(in->auto_gemm, WHATIF_AUTO_GEMM);
    cr_expect_eq(in->auto_from[2], 0);
    whatif_free(t);
    tracegen_free(b.g);
}

/* ---- random traces: the invariants, and MIN's traffic never grows with the ceiling ---------- */

static uint64_t rng_state;

static uint32_t rng(uint32_t n)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33) % n;
}

Test(whatif, random_traces_min_is_a_lower_bound)
{
    for (int trial = 0; trial < 200; trial++) {
        rng_state = 0x9e3779b97f4a7c15ull * (uint64_t)(trial + 1);
        struct tb b;
        tb_start(&b);
        enum { NB = 10 };
        uint64_t size[NB] = {0};
        int live[NB] = {0};
        for (int e = 0; e < 120; e++) {
            int id = (int)rng(NB);
            uint32_t what = rng(10);
            if (!live[id]) {
                size[id] = (1 + rng(8)) * M / (1 + rng(2));
                tb_alloc(&b, id, size[id]);
                live[id] = 1;
            } else if (what == 0) {
                tb_free(&b, id);
                live[id] = 0;
            } else if (what == 1) {
                tb_step(&b, (uint64_t)e);
            } else {
                int ids[3] = {id}, n = 1;
                for (int k = 0; k < 2; k++) {
                    int o = (int)rng(NB);
                    if (live[o] && o != ids[0] && (n < 2 || o != ids[1]))
                        ids[n++] = o;
                }
                uint8_t mode[3];
                for (int k = 0; k < n; k++)
                    mode[k] = (uint8_t)(1 + rng(3));
                tb_op_modes(&b, rng(2) ? MST_OP_GEMM : MST_OP_KERNEL, 1000, n, ids, mode);
            }
        }
        struct whatif_trace *t = tb_load(&b);
        const struct whatif_info *in = whatif_info(t);
        uint64_t prev = 0;
        for (int k = 0; k <= 12; k++) {
            uint64_t limit = in->min_ceiling + (in->peak - in->min_ceiling) * (uint64_t)k / 12;
            struct whatif_result r;
            sim(t, limit, &r);
            uint64_t now = whatif_bytes(&r.t[WHATIF_MIN]);
            if (k > 0)
                cr_expect_leq(now, prev, "trial %d: MIN grew from %llu to %llu at %llu", trial,
                              (unsigned long long)prev, (unsigned long long)now,
                              (unsigned long long)limit);
            prev = now;
            whatif_result_free(&r);
        }
        whatif_free(t);
        tracegen_free(b.g);
    }
}

/* ---- MIN against an exhaustive search over whole-buffer schedules --------------------------- */

enum { XB = 6 }; /* buffer names; 2^XB resident sets */

struct xev {
    int kind; /* 0 alloc, 1 free, 2 op */
    int id, n, ids[3];
    uint64_t size;
};

/* Is buffer `id` read by an op after event e, before it is freed? */
static int used_later(const struct xev *ev, int nev, int e, int id)
{
    for (int k = e + 1; k < nev; k++) {
        if (ev[k].kind == 1 && ev[k].id == id)
            return 0;
        for (int i = 0; ev[k].kind == 2 && i < ev[k].n; i++)
            if (ev[k].ids[i] == id)
                return 1;
    }
    return 0;
}

static uint64_t mask_bytes(unsigned mask, const uint64_t *size)
{
    uint64_t b = 0;
    for (int i = 0; i < XB; i++)
        if (mask & (1u << i))
            b += size[i];
    return b;
}

/* The cheapest schedule that keeps whole buffers, evicts only when short (lazily), and knows the
 * future (a dead victim costs nothing), by dynamic programming over resident sets. */
static uint64_t exhaustive(const struct xev *ev, int nev, uint64_t limit)
{
    uint64_t dp[1 << XB], nx[1 << XB], size[XB] = {0};
    unsigned pinned = 0, later[60] = {0}; /* buffers read after event e */
    for (int e = 0; e < nev && e < 60; e++)
        for (int i = 0; i < XB; i++)
            later[e] |= (unsigned)used_later(ev, nev, e, i) << i;
    for (unsigned m = 0; m < (1u << XB); m++)
        dp[m] = NEVER_COST;
    dp[0] = 0;
    for (int e = 0; e < nev; e++) {
        const struct xev *v = &ev[e];
        unsigned bit = 1u << v->id, want = 0;
        if (v->kind == 0) {
            size[v->id] = v->size;
            pinned = later[e] & bit ? pinned & ~bit : pinned | bit;
            want = bit;
        }
        for (int i = 0; v->kind == 2 && i < v->n; i++)
            want |= 1u << v->ids[i];
        for (unsigned m = 0; m < (1u << XB); m++)
            nx[m] = NEVER_COST;
        for (unsigned m = 0; m < (1u << XB); m++) {
            if (dp[m] == NEVER_COST)
                continue;
            if (v->kind == 1) {
                unsigned to = m & ~bit;
                nx[to] = dp[m] < nx[to] ? dp[m] : nx[to];
                continue;
            }
            uint64_t in = v->kind == 2 ? mask_bytes(want & ~m, size) : 0;
            unsigned base = m | want, free_ = m & ~want & ~pinned;
            for (unsigned E = free_;; E = (E - 1) & free_) { /* every subset of free_ */
                if (mask_bytes(base & ~E, size) <= limit) {
                    uint64_t c = dp[m] + in;
                    c += mask_bytes(E & later[e], size);
                    unsigned to = base & ~E;
                    nx[to] = c < nx[to] ? c : nx[to];
                }
                if (E == 0)
                    break;
            }
        }
        memcpy(dp, nx, sizeof dp);
    }
    uint64_t best = NEVER_COST;
    for (unsigned m = 0; m < (1u << XB); m++)
        best = dp[m] < best ? dp[m] : best;
    return best;
}

/* Equal sizes: MIN is exactly the optimum (Belady's theorem, the paging case). Mixed sizes: MIN
 * on bytes is at most the best whole-buffer schedule, which is at most LRU and the shim's. */
static void against_exhaustive(int equal)
{
    for (int trial = 0; trial < 150; trial++) {
        rng_state = 0x2545f4914f6cdd1dull * (uint64_t)(trial + 7) + (uint64_t)equal;
        struct tb b;
        tb_start(&b);
        struct xev ev[60];
        int nev = 0, live[XB] = {0};
        uint64_t size[XB] = {0};
        while (nev < 60) {
            int id = (int)rng(XB);
            struct xev *v = &ev[nev++];
            *v = (struct xev){.id = id};
            if (!live[id]) {
                size[id] = equal ? M : (1 + rng(4)) * M / 2;
                v->size = size[id];
                tb_alloc(&b, id, size[id]);
                live[id] = 1;
            } else if (rng(8) == 0) {
                v->kind = 1;
                tb_free(&b, id);
                live[id] = 0;
            } else {
                v->kind = 2;
                v->ids[v->n++] = id;
                int o = (int)rng(XB);
                if (rng(3) == 0 && live[o] && o != id)
                    v->ids[v->n++] = o;
                tb_op_modes(&b, MST_OP_KERNEL, 0, v->n, v->ids, NULL);
            }
        }
        struct whatif_trace *t = tb_load(&b);
        const struct whatif_info *in = whatif_info(t);
        for (uint64_t limit = in->min_ceiling; limit <= in->peak; limit += M / 2) {
            struct whatif_result r;
            sim(t, limit, &r);
            uint64_t opt = exhaustive(ev, nev, limit), min = whatif_bytes(&r.t[WHATIF_MIN]);
            cr_assert_neq(opt, NEVER_COST, "trial %d: workable at %llu", trial,
                          (unsigned long long)limit);
            if (equal && limit % M == 0)
                cr_expect_eq(min, opt, "trial %d at %llu: MIN %llu, optimum %llu", trial,
                             (unsigned long long)limit, (unsigned long long)min,
                             (unsigned long long)opt);
            else
                cr_expect_leq(min, opt, "trial %d at %llu: MIN %llu > optimum %llu", trial,
                              (unsigned long long)limit, (unsigned long long)min,
                              (unsigned long long)opt);
            cr_expect_leq(opt, whatif_bytes(&r.t[WHATIF_LRU]), "trial %d", trial);
            cr_expect_leq(opt, whatif_bytes(&r.t[WHATIF_SHIM]), "trial %d", trial);
            whatif_result_free(&r);
        }
        whatif_free(t);
        tracegen_free(b.g);
    }
}

Test(whatif, min_is_optimal_for_equal_sizes)
{
    against_exhaustive(1);
}

Test(whatif, min_bounds_every_whole_buffer_schedule)
{
    against_exhaustive(0);
}

/* ---- damaged traces ------------------------------------------------------------------------ */

/* Every prefix of a trace with ops: loads what came before the cut, never crashes. */
Test(whatif, every_truncation)
{
    struct tb b;
    struct whatif_trace *full = gemm_trace(&b, 0);
    whatif_free(full);
    size_t size;
    const unsigned char *data = tracegen_data(b.g, &size);
    for (size_t n = 0; n <= size; n++) {
        char err[256];
        struct whatif_trace *t = whatif_load_memory(data, n, "cut", -1, err, sizeof err);
        if (!t)
            continue;
        const struct whatif_info *in = whatif_info(t);
        uint64_t limits[] = {0, in->min_ceiling, in->peak / 2, in->peak};
        for (size_t k = 0; k < 4; k++) {
            struct whatif_result r;
            cr_assert_eq(whatif_simulate(t, limits[k], &r), 0);
            check(t, &r);
            whatif_result_free(&r);
        }
        whatif_free(t);
    }
    tracegen_free(b.g);
}

Test(whatif, fuzz_corpus)
{
    const char *src = getenv("MEMSHIM_SOURCE_DIR");
    cr_assert(src);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tests/fuzz/corpus/reader", src);
    DIR *d = opendir(dir);
    cr_assert(d, "%s", dir);
    int files = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        char path[8192], err[256];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct whatif_trace *t = whatif_load(path, -1, err, sizeof err);
        if (!t)
            continue;
        files++;
        const struct whatif_info *in = whatif_info(t);
        for (uint64_t k = 0; k <= 4; k++) {
            struct whatif_result r;
            cr_assert_eq(whatif_simulate(t, in->peak * k / 4, &r), 0);
            check(t, &r);
            whatif_result_free(&r);
        }
        whatif_free(t);
    }
    closedir(d);
    cr_expect_gt(files, 0);
}

/* ---- sizes --------------------------------------------------------------------------------- */

Test(whatif, sizes)
{
    uint64_t v;
    cr_expect_eq(whatif_parse_size("24g", &v), 0);
    cr_expect_eq(v, 24ull << 30);
    cr_expect_eq(whatif_parse_size("1.5GiB", &v), 0);
    cr_expect_eq(v, 3ull << 29);
    cr_expect_eq(whatif_parse_size("512m", &v), 0);
    cr_expect_eq(v, 512ull << 20);
    cr_expect_eq(whatif_parse_size("4096", &v), 0);
    cr_expect_eq(v, 4096);
    cr_expect_eq(whatif_parse_size("2T", &v), 0);
    cr_expect_eq(v, 2ull << 40);
    cr_expect_eq(whatif_parse_size("", &v), -1);
    cr_expect_eq(whatif_parse_size("-1g", &v), -1);
    cr_expect_eq(whatif_parse_size("12x", &v), -1);
    cr_expect_eq(whatif_parse_size("g", &v), -1);
}

/* ---- the command --------------------------------------------------------------------------- */

#define run(out, ...) cli_capture((out), whatif_command, "whatif", __VA_ARGS__)

static size_t count(const char *s, const char *what)
{
    size_t n = 0;
    for (const char *p = s; (p = strstr(p, what)) != NULL; p += strlen(what))
        n++;
    return n;
}

static char dir[256], trace_a[300], trace_b[300];
static struct cli_output o;

/* Two ranks of a synthetic training run with accesses; b also measured its GEMM rate. */
static void make_traces(void)
{
    snprintf(dir, sizeof dir, "/tmp/memshim-whatif-XXXXXX");
    cr_assert(mkdtemp(dir));
    snprintf(trace_a, sizeof trace_a, "%s/rank-0.mst", dir);
    snprintf(trace_b, sizeof trace_b, "%s/rank-1.mst", dir);
    struct tracegen_training tr = {.steps = 3,
                                   .layers = 4,
                                   .layer_bytes = 8 * M,
                                   .activation_bytes = 4 * M,
                                   .temporaries = 1,
                                   .accesses = 1,
                                   .free_at_exit = 1};
    for (int k = 0; k < 2; k++) {
        struct tracegen_header h = {.pid = 10 + (uint32_t)k,
                                    .rank = (uint32_t)k,
                                    .flags = MST_FILE_F_STACKS | MST_FILE_F_ACCESSES};
        struct tracegen *g = tracegen_new_file(k ? trace_b : trace_a, &h);
        cr_assert(g);
        if (k)
            tracegen_measure(g, 10, 25000000000ull, 25000000000ull, 100000000000000ull);
        tracegen_training_run(g, &tr);
        cr_assert_eq(tracegen_finish(g), 0);
        tracegen_free(g);
    }
}

static void remove_traces(void)
{
    unlink(trace_a);
    unlink(trace_b);
    char svg[300];
    snprintf(svg, sizeof svg, "%s/sweep.svg", dir);
    unlink(svg);
    rmdir(dir);
}

TestSuite(whatif_command, .init = make_traces, .fini = remove_traces);

Test(whatif_command, usage_errors)
{
    run(&o, trace_a, NULL);
    cr_expect_eq(o.rc, 2);
    cr_expect_str_eq(o.err, "whatif: give --limit SIZE[,SIZE...] or --sweep\n");
    run(&o, "--limit", "24q", trace_a, NULL);
    cr_expect_eq(o.rc, 2);
    cr_expect(strstr(o.err, "whatif: --limit: bad value '24q'"), "%s", o.err);
    run(&o, "--limit", "1g", "--svg", "x.svg", trace_a, NULL);
    cr_expect_eq(o.rc, 2);
    cr_expect_str_eq(o.err, "whatif: --svg draws the --sweep curve: add --sweep\n");
    run(&o, "--limit", "1g", "--bogus", trace_a, NULL);
    cr_expect_eq(o.rc, 2);
    cr_expect_str_eq(o.err, "whatif: unknown option '--bogus' (see --help)\n");
    run(&o, "--limit", "1g", "--link-gbps", "0", trace_a, NULL);
    cr_expect_eq(o.rc, 2);
    run(&o, "--limit", "1g", "/nonexistent.mst", NULL);
    cr_expect_eq(o.rc, 2);
    run(&o, "--limit", "1g", "--costs", "h2d=fast", trace_a, NULL);
    cr_expect_eq(o.rc, 2);
    cr_expect(strstr(o.err, "whatif: --costs: bad value 'h2d=fast' (accepted: comma-separated "
                            "h2d=RATE"),
              "%s", o.err);
}

/* --costs reaches the replay: rates and their sources in the JSON, the auto table in text. */
Test(whatif_command, costs_option_and_auto_report)
{
    run(&o, "--json", "--limit", "40m", "--costs", "gemm=2t,d2h=5g", trace_b, NULL);
    cr_assert_eq(o.rc, 0, "%s", o.err);
    cr_expect(strstr(o.out, "\"h2d_bytes_per_s\": 25000000000"), "%s", o.out);
    cr_expect(strstr(o.out, "\"h2d_source\": \"measured\""));
    cr_expect(strstr(o.out, "\"d2h_bytes_per_s\": 5000000000"));
    cr_expect(strstr(o.out, "\"d2h_source\": \"option\""));
    cr_expect(strstr(o.out, "\"gemm_flops_per_s\": 2000000000000"));
    cr_expect(strstr(o.out, "\"gemm_source\": \"option\""));
    cr_expect_eq(count(o.out, "\"auto\": {"), 1 + 4, "the limit and its 4 step slots");
    cr_expect(strstr(o.out, "\"dropped_bytes\": "));
    run(&o, "--limit", "40m", trace_a, NULL);
    cr_assert_eq(o.rc, 0, "%s", o.err);
    cr_expect(strstr(o.out, "Auto       h2d 50 GB/s (default), d2h 50 GB/s (default), GEMM 400 "
                            "TFLOP/s (default)\n"),
              "%s", o.out);
    cr_expect(strstr(o.out, "Auto policy (DTR victims, each spilled or recomputed, the cheaper):"));
    cr_expect(strstr(o.out, "  ceiling   auto moved"), "%s", o.out);
}

/* The JSON carries exactly what whatif_simulate computes. */
Test(whatif_command, json_matches_the_library)
{
    char err[256];
    struct whatif_trace *t = whatif_load(trace_a, -1, err, sizeof err);
    cr_assert(t, "%s", err);
    const struct whatif_info *in = whatif_info(t);
    cr_expect_gt(in->peak, 40 * M);
    cr_expect_lt(in->min_ceiling, 40 * M);
    struct whatif_result r;
    cr_assert_eq(whatif_simulate(t, 40 * M, &r), 0);
    check(t, &r);
    cr_expect_gt(whatif_bytes(&r.t[WHATIF_MIN]), 0);
    run(&o, "--json", "--limit", "40m,1t", trace_a, NULL);
    cr_assert_eq(o.rc, 0, "%s", o.err);
    char want[256];
    snprintf(want, sizeof want, "\"peak_bytes\": %llu", (unsigned long long)in->peak);
    cr_expect(strstr(o.out, want), "%s", want);
    snprintf(want, sizeof want, "\"min_ceiling_bytes\": %llu", (unsigned long long)in->min_ceiling);
    cr_expect(strstr(o.out, want), "%s", want);
    for (int p = 0; p < WHATIF_POLICIES; p++) {
        snprintf(want, sizeof want, "\"moved_bytes\": %llu",
                 (unsigned long long)whatif_bytes(&r.t[p]));
        cr_expect(strstr(o.out, want), "%s", want);
    }
    cr_expect(strstr(o.out, "\"limit_bytes\": 41943040,\n      \"fits\": false"), "%s", o.out);
    cr_expect(strstr(o.out, "\"limit_bytes\": 1099511627776,\n      \"fits\": true"));
    cr_expect(strstr(o.out, "\"gemm_rate_source\": \"default\""));
    cr_expect_eq(count(o.out, "\"steps\": ["), 2);
    /* the prologue slot and 3 steps, per limit */
    cr_expect_eq(count(o.out, "\"peak_bytes\""), 1 + 2 * 4);
    whatif_result_free(&r);
    whatif_free(t);
}

Test(whatif_command, text_report)
{
    run(&o, "--limit", "40m", "--link-gbps", "25", "--tflops", "100", "--spill-min", "1m", trace_a,
        NULL);
    cr_assert_eq(o.rc, 0, "%s", o.err);
    cr_expect(strstr(o.out, "Shim       spills cudaMalloc/cuMemAlloc ranges of 1.00 MiB or more, "
                            "rounded to 2.00 MiB; smaller share chunks, spilled whole; a range "
                            "an op needs back without room is used in host memory\n"),
              "%s", o.out);
    cr_expect(strstr(o.out, "Rates      link 25 GB/s each way, GEMM 100 TFLOP/s (option)\n"), "%s",
              o.out);
    cr_expect(strstr(o.out, "Per step at 40.0 MiB:"));
    cr_expect(strstr(o.out, "  ceiling   fits  MIN moved"), "%s", o.out);
    run(&o, "--limit", "40m", "--no-host-use", "--json", trace_a, NULL);
    cr_assert_eq(o.rc, 0, "%s", o.err);
    cr_expect(strstr(o.out, "\"host_use\": false"), "%s", o.out);
}

Test(whatif_command, directory_and_measured_rate)
{
    run(&o, "--json", "--limit", "40m", dir, NULL);
    cr_assert_eq(o.rc, 0, "%s", o.err);
    cr_expect(strstr(o.out, "\"traces\": ["));
    cr_expect_eq(count(o.out, "\"trace\": "), 2);
    cr_expect(strstr(o.out, "\"gemm_rate_source\": \"measured\""));
    cr_expect(strstr(o.out, "\"gemm_flops_per_s\": 100000000000000"));
}

Test(whatif_command, sweep_and_chart)
{
    char svg[300];
    snprintf(svg, sizeof svg, "%s/sweep.svg", dir);
    run(&o, "--json", "--sweep=5", "--svg", svg, trace_a, NULL);
    cr_assert_eq(o.rc, 0, "%s", o.err);
    cr_expect_eq(count(o.out, "\"limit_bytes\""), 5);
    cr_expect(strstr(o.out, "\"sweep\": ["));
    /* the first point is the peak (fits), the last the smallest workable ceiling */
    cr_expect_eq(count(o.out, "\"fits\": true"), 1);
    cr_expect_eq(count(o.out, "\"feasible\": false"), 0);
    FILE *f = fopen(svg, "r");
    cr_assert(f);
    static char doc[1 << 16];
    size_t n = fread(doc, 1, sizeof doc - 1, f);
    doc[n] = '\0';
    fclose(f);
    cr_expect(strncmp(doc, "<?xml", 5) == 0);
    /* MIN, LRU and the shim's policy, then recompute and auto (dashed) */
    cr_expect_eq(count(doc, "<path"), 5);
    cr_expect(strstr(doc, "MIN (lower bound)"));
    cr_expect(strstr(doc, "recompute (moved)") && strstr(doc, "auto (spilled)"));
    cr_expect_eq(count(doc, "class=\"recompute\""), 5, "a point per ceiling");
    cr_expect(n > 6 && strcmp(doc + n - 7, "</svg>\n") == 0);
}
