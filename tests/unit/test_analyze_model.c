/* Replay model and summary numbers on synthetic traces, computed by hand. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "summary.h"
#include "tracegen.h"

static struct tracegen *g;
static uint32_t th;

static void setup(void)
{
    g = tracegen_new_memory(NULL);
    th = tracegen_thread(g, 1, "main");
}

static void teardown(void)
{
    tracegen_free(g);
}

TestSuite(model, .init = setup, .fini = teardown);

static struct model *replay(int refine, const struct model_callbacks *cb)
{
    size_t size;
    const void *data = tracegen_data(g, &size);
    char err[256];
    struct model_options o = {.refine = refine};
    struct model *m = model_replay_memory(data, size, "t.mst", &o, cb, err, sizeof err);
    cr_assert_not_null(m, "%s", err);
    return m;
}

Test(model, peak_and_breakdown_at_peak)
{
    tracegen_malloc(g, 10, th, 0xa000, 100, MST_CAT_PARAMETER, 0, 0);
    tracegen_malloc(g, 20, th, 0xb000, 300, MST_CAT_ACTIVATION, 0, 0); /* peak 400 */
    tracegen_dealloc(g, 30, th, 0xb000);
    tracegen_malloc(g, 40, th, 0xc000, 250, MST_CAT_GRADIENT, 0, 0); /* 350 */
    struct model *m = replay(0, NULL);
    const struct model_peak *p = model_peak(m);
    cr_assert_eq(p->bytes, 400);
    cr_assert_eq(p->time_ns, 20);
    cr_assert_eq(p->step, MODEL_NO_STEP);
    cr_assert_eq(p->by_category[MST_CAT_PARAMETER], 100);
    cr_assert_eq(p->by_category[MST_CAT_ACTIVATION], 300);
    cr_assert_eq(p->by_category[MST_CAT_GRADIENT], 0);
    cr_assert_eq(p->live_count, 2);
    const struct model_totals *t = model_totals(m);
    cr_assert_eq(t->allocations, 3);
    cr_assert_eq(t->frees, 1);
    cr_assert_eq(t->live_at_exit, 2);
    cr_assert_eq(t->live_bytes_at_exit, 350);
    cr_assert_eq(t->live_by_category_at_exit[MST_CAT_GRADIENT], 250);
    cr_assert_eq(model_state(m)->resident, 350);
    model_free(m);
}

Test(model, unknown_free_is_counted_not_fatal)
{
    tracegen_dealloc(g, 10, th, 0xdead);
    tracegen_malloc(g, 20, th, 0xa000, 100, 0, 0, 0);
    struct model *m = replay(0, NULL);
    cr_assert_eq(model_totals(m)->unknown_frees, 1);
    cr_assert_eq(model_totals(m)->frees, 0);
    cr_assert_eq(model_peak(m)->bytes, 100);
    cr_assert_eq(model_reader_status(m), READER_OK);
    model_free(m);
}

Test(model, reused_address_without_free_replaces)
{
    tracegen_malloc(g, 10, th, 0xa000, 100, 0, 0, 0);
    tracegen_malloc(g, 20, th, 0xa000, 40, 0, 0, 0);
    struct model *m = replay(0, NULL);
    cr_assert_eq(model_state(m)->resident, 40);
    cr_assert_eq(model_state(m)->live_count, 1);
    cr_assert_eq(model_peak(m)->bytes, 100);
    model_free(m);
}

Test(model, host_memory_is_not_charged)
{
    struct mst_rec_alloc a = {.time_ns = 5,
                              .addr = 0x10,
                              .size = 1000,
                              .thread = th,
                              .kind = MST_KIND_CU_MEM_CREATE,
                              .flags = MST_ALLOC_F_HOST | MST_ALLOC_F_HANDLE};
    tracegen_alloc(g, &a);
    tracegen_malloc(g, 6, th, 0x10, 10, 0, 0, 0); /* same number, but a device address */
    struct model *m = replay(0, NULL);
    cr_assert_eq(model_peak(m)->bytes, 10);
    cr_assert_eq(model_state(m)->live_count, 2);
    cr_assert_eq(model_totals(m)->host_allocations, 1);
    model_free(m);
}

Test(model, steps_and_steady_state)
{
    tracegen_malloc(g, 1, th, 0x1000, 1000, MST_CAT_PARAMETER, 0, 0);
    for (uint64_t s = 0; s < 3; s++) {
        uint64_t t0 = 100 * (s + 1);
        tracegen_step(g, t0, th, s);
        uint64_t act = 100 * (s + 1); /* 100, 200, 300 */
        tracegen_malloc(g, t0 + 1, th, 0x2000, act, MST_CAT_ACTIVATION, 0, 0);
        tracegen_malloc(g, t0 + 2, th, 0x3000, 50, MST_CAT_TEMPORARY, 0, 0);
        tracegen_dealloc(g, t0 + 3, th, 0x3000);
        tracegen_dealloc(g, t0 + 4, th, 0x2000);
    }
    struct model *m = replay(0, NULL);
    size_t n;
    const struct model_step *steps = model_steps(m, &n);
    cr_assert_eq(n, 3);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(steps[i].step, (int64_t)i);
        cr_assert_eq(steps[i].peak_bytes, 1000 + 100 * (i + 1) + 50);
        cr_assert_eq(steps[i].peak_by_category[MST_CAT_TEMPORARY], 50);
        cr_assert_eq(steps[i].start_bytes, 1000);
        cr_assert_eq(steps[i].end_bytes, 1000);
        cr_assert_eq(steps[i].allocations, 2);
        cr_assert_eq(steps[i].frees, 2);
    }
    cr_assert(steps[0].complete && steps[1].complete && !steps[2].complete);
    cr_assert_eq(model_steady_step(m), &steps[1]);
    cr_assert_eq(model_peak(m)->step, 2);
    cr_assert_eq(model_peak(m)->bytes, 1350);
    cr_assert_eq(model_peak(m)->time_ns, 302);
    model_free(m);
}

Test(model, phase_at_peak)
{
    uint32_t fwd = tracegen_string(g, "forward");
    tracegen_phase(g, 1, th, fwd, 1);
    tracegen_malloc(g, 2, th, 0x1000, 10, 0, 0, fwd);
    tracegen_phase(g, 3, th, fwd, 0);
    tracegen_dealloc(g, 4, th, 0x1000);
    struct model *m = replay(0, NULL);
    cr_assert_eq(model_peak(m)->phase, fwd);
    model_free(m);
}

/* Whether a batch of ALLOC and FREE records leaves behind the phase of its last record, in each
 * of the four forms, on another thread than the records before it: the fast paths leave the
 * phase to the end of the batch. */
static int phase_after_last(int alloc, int stream)
{
    uint32_t fwd = tracegen_string(g, "forward"), opt = tracegen_string(g, "optimizer");
    uint32_t th2 = tracegen_thread(g, 2, "other");
    tracegen_phase(g, 1, th2, opt, 1);
    tracegen_phase(g, 2, th, fwd, 1);
    for (uint64_t i = 0; i < 20; i++) { /* the usual ones, by the fast paths */
        tracegen_malloc(g, 10 + 2 * i, th, 0x1000 + 0x100 * i, 10, MST_CAT_ACTIVATION, 0, fwd);
        tracegen_dealloc(g, 11 + 2 * i, th, 0x1000 + 0x100 * i);
    }
    struct mst_rec_alloc a = {.time_ns = 100,
                              .addr = 0x9000,
                              .size = 10,
                              .requested = 10,
                              .stream = stream ? 7 : 0,
                              .thread = th2,
                              .phase = opt,
                              .kind = MST_KIND_CUDA_MALLOC_ASYNC,
                              .category = MST_CAT_TEMPORARY};
    tracegen_malloc(g, 99, th, 0x8000, 10, MST_CAT_ACTIVATION, 0, fwd);
    if (alloc) {
        tracegen_alloc(g, &a);
    } else if (stream) {
        struct mst_rec_free f = {.time_ns = 100,
                                 .addr = 0x8000,
                                 .size = 10,
                                 .stream = 7,
                                 .thread = th2,
                                 .kind = MST_KIND_CUDA_MALLOC_ASYNC};
        tracegen_raw(g, MST_REC_FREE, &f, sizeof f);
    } else {
        tracegen_dealloc(g, 100, th2, 0x8000);
    }
    /* a record of another kind after it, which ends the batch there (the last record of a file
     * is read alone: the batch needs room for the longest record past its records) */
    tracegen_ceiling(g, 101, 1u << 30, MST_POLICY_FAIL);
    struct model *m = replay(0, NULL);
    int same = model_state(m)->phase == opt;
    cr_assert_eq(model_totals(m)->allocations, alloc ? 22 : 21);
    cr_assert_eq(model_totals(m)->frees, alloc ? 20 : 21);
    model_free(m);
    return same;
}

Test(model, phase_after_short_alloc)
{
    cr_assert(phase_after_last(1, 0));
}

Test(model, phase_after_long_alloc)
{
    cr_assert(phase_after_last(1, 1));
}

Test(model, phase_after_short_free)
{
    cr_assert(phase_after_last(0, 0));
}

Test(model, phase_after_long_free)
{
    cr_assert(phase_after_last(0, 1));
}

Test(model, phase_pops_by_name)
{
    uint32_t outer = tracegen_string(g, "forward"), inner = tracegen_string(g, "attention");
    uint32_t stray = tracegen_string(g, "never-opened");
    tracegen_phase(g, 1, th, outer, 1);
    tracegen_phase(g, 2, th, inner, 1);
    tracegen_phase(g, 3, th, stray, 0); /* closes nothing */
    tracegen_malloc(g, 4, th, 0x1000, 10, 0, 0, inner);
    tracegen_phase(g, 5, th, outer, 0); /* closes both */
    tracegen_phase(g, 6, th, 0, 0);     /* nothing left to close */
    tracegen_dealloc(g, 7, th, 0x1000);
    struct model *m = replay(0, NULL);
    cr_assert_eq(model_state(m)->phase, 0);
    cr_assert_eq(model_peak(m)->phase, inner);
    model_free(m);
}

Test(model, peaks_per_device)
{
    struct mst_rec_alloc a = {.time_ns = 1,
                              .addr = 0x1000,
                              .size = 100,
                              .thread = th,
                              .kind = MST_KIND_CUDA_MALLOC,
                              .device = 0};
    tracegen_alloc(g, &a);
    a.time_ns = 2, a.device = 1, a.size = 70; /* same address, other device */
    tracegen_alloc(g, &a);
    struct mst_rec_free f = {.time_ns = 3,
                             .addr = 0x1000,
                             .size = 100,
                             .thread = th,
                             .kind = MST_KIND_CUDA_MALLOC,
                             .device = 0};
    tracegen_raw(g, MST_REC_FREE, &f, sizeof f);
    a.time_ns = 4, a.addr = 0x2000, a.size = 50;
    tracegen_alloc(g, &a); /* device 1: 120, alone higher than before */
    struct model *m = replay(0, NULL);
    cr_assert_eq(model_peak(m)->bytes, 170);
    cr_assert_eq(model_device_peak(m, 0)->bytes, 100);
    cr_assert_eq(model_device_peak(m, 1)->bytes, 120);
    cr_assert_eq(model_device_peak(m, 1)->time_ns, 4);
    cr_assert_not(model_device_peak(m, 2)->used);
    cr_assert_eq(model_find(m, 1, 0x1000)->size, 70);
    cr_assert_null(model_find(m, 0, 0x1000));
    model_free(m);
}

/* An allocation made while one device was charged, freed after a second one appeared: its free
 * is taken off its own device, where the batched replay's fast path, which keeps no per-device
 * figures, must leave it to the general one. */
Test(model, free_after_a_second_device)
{
    tracegen_malloc(g, 1, th, 0x1000, 100, MST_CAT_PARAMETER, 0, 0); /* device 0 */
    struct mst_rec_alloc a = {.time_ns = 2,
                              .addr = 0x9000,
                              .size = 10,
                              .requested = 10,
                              .thread = th,
                              .kind = MST_KIND_CUDA_MALLOC,
                              .category = MST_CAT_PARAMETER,
                              .device = 1};
    tracegen_alloc(g, &a);
    tracegen_dealloc(g, 3, th, 0x1000);                             /* device 0 back to 0 */
    tracegen_malloc(g, 4, th, 0x2000, 60, MST_CAT_PARAMETER, 0, 0); /* device 0: 60 */
    struct model *m = replay(0, NULL);
    cr_assert_eq(model_peak(m)->bytes, 110);
    cr_assert_eq(model_device_peak(m, 0)->bytes, 100);
    cr_assert_eq(model_device_peak(m, 1)->bytes, 10);
    cr_assert_eq(model_state(m)->resident, 70);
    model_free(m);
}

/* Two allocations freed, one by a short FREE and one by a long FREE on a stream: both leave
 * the replay, batched or with callbacks; a callback sees the short one with its allocation's
 * size and site, as the long one carries them. */
static int last_free(void *ctx, const struct model *m, const struct model_state *st,
                     const struct model_event *ev)
{
    (void)m, (void)st;
    if (ev->rec->kind == MST_REC_FREE)
        *(struct mst_rec_free *)ctx = ev->rec->u.free;
    return 0;
}

Test(model, frees_short_and_long)
{
    uint32_t site = tracegen_frame(g, 0, 0, 0, 0x400000, 0);
    tracegen_malloc(g, 1, th, 0x1000, 100, MST_CAT_ACTIVATION, site, 0);
    tracegen_malloc(g, 2, th, 0x2000, 60, MST_CAT_PARAMETER, 0, 0);
    struct mst_rec_free f = {.time_ns = 3,
                             .addr = 0x2000,
                             .size = 60,
                             .stream = 5,
                             .thread = th,
                             .kind = MST_KIND_CUDA_MALLOC_ASYNC};
    tracegen_raw(g, MST_REC_FREE, &f, sizeof f);
    tracegen_dealloc(g, 4, th, 0x1000);
    for (int with_callback = 0; with_callback < 2; with_callback++) {
        struct mst_rec_free seen = {0};
        struct model_callbacks cb = {.ctx = &seen, .on_event = last_free};
        struct model *m = replay(0, with_callback ? &cb : NULL);
        cr_assert_eq(model_state(m)->resident, 0);
        cr_assert_eq(model_totals(m)->frees, 2);
        cr_assert_eq(model_totals(m)->unknown_frees, 0);
        cr_assert_eq(model_peak(m)->bytes, 160);
        if (with_callback) {
            cr_assert_eq(seen.addr, 0x1000);
            cr_assert_eq(seen.size, 100, "the short FREE's bytes are its allocation's");
            cr_assert_eq(seen.site, site);
            cr_assert_eq(seen.stream, 0);
        }
        model_free(m);
    }
}

Test(model, residency_moves_bytes)
{
    tracegen_malloc(g, 1, th, 0x1000, 100, MST_CAT_ACTIVATION, 0, 0);
    tracegen_malloc(g, 2, th, 0x2000, 60, MST_CAT_PARAMETER, 0, 0);
    struct mst_rec_residency r = {.time_ns = 3,
                                  .addr = 0x1000,
                                  .bytes = 100,
                                  .duration_ns = 7,
                                  .thread = th,
                                  .event = MST_RES_SPILL};
    tracegen_residency(g, &r);
    tracegen_malloc(g, 4, th, 0x3000, 90, MST_CAT_GRADIENT, 0, 0); /* resident 150 < 160 */
    r.time_ns = 5, r.event = MST_RES_RESTORE;
    tracegen_residency(g, &r); /* resident 250 */
    r.time_ns = 6, r.event = MST_RES_DROP, r.addr = 0x3000, r.bytes = 90;
    tracegen_residency(g, &r);
    struct model *m = replay(0, NULL);
    const struct model_state *st = model_state(m);
    const struct model_totals *t = model_totals(m);
    cr_assert_eq(st->resident, 160);
    cr_assert_eq(st->dropped, 90);
    cr_assert_eq(st->dropped_by_category[MST_CAT_GRADIENT], 90);
    cr_assert_eq(st->spilled, 0);
    cr_assert_eq(model_peak(m)->bytes, 250);
    cr_assert_eq(t->residency_count[MST_RES_SPILL], 1);
    cr_assert_eq(t->residency_bytes[MST_RES_SPILL], 100);
    cr_assert_eq(t->residency_ns[MST_RES_SPILL], 7);
    cr_assert_eq(t->residency_count[MST_RES_DROP], 1);
    model_free(m);
}

/* Frees of allocations the shim moved: their bytes leave the state they were moved to, moved
 * alone or with the chunk that holds them. */
Test(model, frees_of_moved_allocations)
{
    const uint64_t base = 0x200000;
    tracegen_malloc(g, 1, th, 0x1000, 100, MST_CAT_ACTIVATION, 0, 0);
    tracegen_malloc(g, 2, th, 0x3000, 90, MST_CAT_GRADIENT, 0, 0);
    tracegen_malloc(g, 3, th, base, 4096, MST_CAT_PARAMETER, 0, 0); /* a block of a chunk */
    tracegen_malloc(g, 4, th, 0x9000, 50, MST_CAT_PARAMETER, 0, 0);
    struct mst_rec_residency r = {
        .time_ns = 5, .addr = 0x1000, .bytes = 100, .thread = th, .event = MST_RES_SPILL};
    tracegen_residency(g, &r);
    r.time_ns = 6, r.addr = 0x3000, r.bytes = 90, r.event = MST_RES_DROP;
    tracegen_residency(g, &r);
    r.time_ns = 7, r.addr = base, r.bytes = 2 << 20, r.event = MST_RES_SPILL; /* the chunk */
    tracegen_residency(g, &r);
    tracegen_dealloc(g, 8, th, 0x1000);
    tracegen_dealloc(g, 9, th, 0x3000);
    tracegen_dealloc(g, 10, th, base);
    /* records after the frees, so that they are replayed in place, as a batch */
    tracegen_malloc(g, 11, th, 0xa000, 1, MST_CAT_PARAMETER, 0, 0);
    tracegen_malloc(g, 12, th, 0xb000, 1, MST_CAT_PARAMETER, 0, 0);
    struct model *m = replay(0, NULL);
    const struct model_state *st = model_state(m);
    cr_assert_eq(st->resident, 52);
    cr_assert_eq(st->resident_by_category[MST_CAT_PARAMETER], 52);
    cr_assert_eq(st->spilled, 0);
    cr_assert_eq(st->dropped, 0);
    cr_assert_eq(model_totals(m)->frees, 3);
    model_free(m);
}

/* A host use moves nothing, on an own range or a chunk; one with flops (a dropped range
 * recomputed into host memory) leaves the range spilled. */
Test(model, host_use_keeps_ranges_where_they_are)
{
    const uint64_t C = 2 << 20, base = 0x200000;
    tracegen_malloc(g, 1, th, 0x1000, 100, MST_CAT_ACTIVATION, 0, 0);
    tracegen_malloc(g, 2, th, base, 4096, MST_CAT_PARAMETER, 0, 0); /* a block of a chunk */
    tracegen_malloc(g, 3, th, 0x9000, 50, MST_CAT_GRADIENT, 0, 0);
    struct mst_rec_residency r = {
        .time_ns = 4, .addr = 0x1000, .bytes = 100, .thread = th, .event = MST_RES_SPILL};
    tracegen_residency(g, &r);
    r.time_ns = 5, r.addr = base, r.bytes = C;
    tracegen_residency(g, &r);
    r.time_ns = 6, r.addr = 0x9000, r.bytes = 50, r.event = MST_RES_DROP;
    tracegen_residency(g, &r);
    r.event = MST_RES_HOST_USE;
    for (uint64_t t = 7; t < 9; t++) { /* spilled, then a chunk that is away, used in place */
        r.time_ns = t, r.addr = t == 7 ? 0x1000 : base, r.bytes = t == 7 ? 100 : C;
        tracegen_residency(g, &r);
    }
    r.time_ns = 9, r.addr = 0x9000, r.bytes = 50, r.flops = 1000; /* recomputed into host */
    tracegen_residency(g, &r);
    struct model *m = replay(0, NULL);
    const struct model_state *st = model_state(m);
    const struct model_totals *t = model_totals(m);
    cr_assert_eq(st->resident, 0);
    cr_assert_eq(st->spilled, 100 + 4096 + 50);
    cr_assert_eq(st->dropped, 0);
    cr_assert_eq(t->residency_count[MST_RES_HOST_USE], 3);
    cr_assert_eq(t->residency_bytes[MST_RES_HOST_USE], 100 + C + 50);
    cr_assert_eq(t->residency_flops[MST_RES_HOST_USE], 1000);
    cr_assert_eq(t->residency_flops[MST_RES_RECOMPUTE], 0);
    model_free(m);
}

/* A chunk of small allocations moves whole: its record names the chunk's base and size. */
Test(model, residency_of_a_chunk_moves_every_block)
{
    const uint64_t C = 2 << 20, base = 0x200000;
    tracegen_malloc(g, 1, th, base, 4096, MST_CAT_ACTIVATION, 0, 0);
    tracegen_malloc(g, 2, th, base + 65536, 8192, MST_CAT_PARAMETER, 0, 0);
    tracegen_malloc(g, 3, th, base + C, 512, MST_CAT_GRADIENT, 0, 0); /* the next chunk */
    struct mst_rec_residency r = {
        .time_ns = 4, .addr = base, .bytes = C, .thread = th, .event = MST_RES_SPILL};
    tracegen_residency(g, &r);
    struct model *m = replay(0, NULL);
    cr_assert_eq(model_state(m)->resident, 512);
    cr_assert_eq(model_state(m)->spilled, 4096 + 8192);
    model_free(m);
}

Test(model, rounding_at_the_peak)
{
    struct mst_rec_alloc a = {.time_ns = 1,
                              .addr = 0x1000,
                              .size = 4 << 20,
                              .requested = (9 << 20) / 4,
                              .thread = th,
                              .kind = MST_KIND_CUDA_MALLOC,
                              .category = MST_CAT_ACTIVATION};
    tracegen_alloc(g, &a);
    tracegen_malloc(g, 2, th, 0x900000, 256, MST_CAT_PARAMETER, 0, 0);
    tracegen_dealloc(g, 3, th, 0x1000);
    struct model *m = replay(0, NULL);
    cr_assert_eq(model_peak(m)->bytes, (4 << 20) + 256);
    cr_assert_eq(model_peak(m)->requested, (9 << 20) / 4 + 256);
    model_free(m);
}

Test(model, retag_moves_category)
{
    tracegen_malloc(g, 1, th, 0x1000, 100, MST_CAT_UNKNOWN, 0, 0);
    tracegen_retag(g, 2, 0x1000, MST_CAT_KV_CACHE);
    struct model *m = replay(0, NULL);
    cr_assert_eq(model_state(m)->resident_by_category[MST_CAT_KV_CACHE], 100);
    cr_assert_eq(model_state(m)->resident_by_category[MST_CAT_UNKNOWN], 0);
    cr_assert_eq(model_peak(m)->by_category[MST_CAT_UNKNOWN], 100);
    cr_assert_eq(model_find(m, 0, 0x1000)->category, MST_CAT_KV_CACHE);
    model_free(m);
}

Test(model, oom_recorded)
{
    struct mst_rec_oom o = {.time_ns = 9,
                            .request = 1 << 20,
                            .ceiling = 1 << 19,
                            .resident = 1000,
                            .thread = th,
                            .kind = MST_KIND_CUDA_MALLOC};
    o.by_category[MST_CAT_ACTIVATION] = 1000;
    tracegen_oom(g, &o);
    struct model *m = replay(0, NULL);
    size_t n;
    const struct mst_rec_oom *ooms = model_ooms(m, &n);
    cr_assert_eq(n, 1);
    cr_assert_eq(model_totals(m)->ooms, 1);
    cr_assert_eq(ooms[0].request, 1 << 20);
    cr_assert_eq(ooms[0].by_category[MST_CAT_ACTIVATION], 1000);
    model_free(m);
}

/* 2 layers, parameters P, activations A, one temporary T = A/4 + 1 per layer and pass, Adam
 * state 2P per layer, one leaked activation per step (tracegen.c documents the schedule).
 * The peak is in the backward pass of step 1, after the second gradient and its temporary:
 * 2P params + 4P Adam + 2P grads + A (step 0's leak) + A (step 1's layer 0) + T. */
static void training(int unknown)
{
    struct tracegen_training t = {.steps = 2,
                                  .layers = 2,
                                  .layer_bytes = 1 << 20,
                                  .activation_bytes = 1 << 19,
                                  .temporaries = 1,
                                  .leak = 1,
                                  .unknown = unknown};
    tracegen_training_run(g, &t);
}

static const uint64_t P = 1 << 20, A = 1 << 19, T = (1 << 19) / 4 + 1;

Test(model, training_run_numbers)
{
    training(0);
    struct model *m = replay(0, NULL);
    const struct model_peak *p = model_peak(m);
    cr_assert_eq(p->bytes, 8 * P + 2 * A + T);
    cr_assert_eq(p->step, 1);
    cr_assert_str_eq(reader_string(model_reader(m), p->phase), "backward");
    cr_assert_eq(p->by_category[MST_CAT_PARAMETER], 2 * P);
    cr_assert_eq(p->by_category[MST_CAT_OPTIMIZER_STATE], 4 * P);
    cr_assert_eq(p->by_category[MST_CAT_GRADIENT], 2 * P);
    cr_assert_eq(p->by_category[MST_CAT_ACTIVATION], 2 * A);
    cr_assert_eq(p->by_category[MST_CAT_TEMPORARY], T);
    const struct model_totals *t = model_totals(m);
    cr_assert_eq(t->live_bytes_at_exit, 6 * P + 2 * A);
    cr_assert_eq(t->live_at_exit, 2 + 4 + 2);
    size_t n;
    const struct model_step *s = model_steps(m, &n);
    cr_assert_eq(n, 2);
    /* step 0: Adam state appears in the optimizer phase while both gradients are alive */
    cr_assert_eq(s[0].peak_bytes, 2 * P + 2 * P + 4 * P + A);
    model_free(m);
}

Test(model, top_sites_at_peak)
{
    training(0);
    struct model *m = replay(0, NULL);
    const struct model_site *top[3];
    cr_assert_eq(summary_top_sites(m, SUMMARY_BY_PEAK, top, 3), 3);
    cr_assert_eq(top[0]->bytes_at_peak, 4 * P);
    cr_assert_eq(top[0]->category, MST_CAT_OPTIMIZER_STATE);
    cr_assert_eq(top[1]->bytes_at_peak, 2 * P);
    const char *frames[8];
    size_t nf = model_site_frames(m, top[0]->site, frames, 8);
    cr_assert_eq(nf, 3);
    cr_assert_str_eq(frames[0], "model::Adam::init() (libtrain.so)");
    cr_assert_str_eq(frames[2], "main (libtrain.so)");
    const struct model_site *leaks[8];
    size_t nl = summary_top_sites(m, SUMMARY_BY_EXIT, leaks, 8);
    cr_assert_eq(nl, 3);
    cr_assert_eq(leaks[2]->bytes_at_exit, 2 * A);
    cr_assert_eq(leaks[2]->count_at_exit, 2);
    model_free(m);
}

Test(model, refinement_recovers_categories)
{
    training(1);
    struct model *m = replay(1, NULL);
    const struct model_peak *p = model_peak(m);
    cr_assert_eq(p->bytes, 8 * P + 2 * A + T);
    cr_assert_eq(p->by_category[MST_CAT_UNKNOWN], 0);
    cr_assert_eq(p->by_category[MST_CAT_PARAMETER], 2 * P);
    cr_assert_eq(p->by_category[MST_CAT_OPTIMIZER_STATE], 4 * P);
    cr_assert_eq(p->by_category[MST_CAT_GRADIENT], 2 * P);
    cr_assert_eq(p->by_category[MST_CAT_ACTIVATION], 2 * A);
    cr_assert_eq(p->by_category[MST_CAT_TEMPORARY], T);
    cr_assert_gt(model_totals(m)->inferred_allocations, 0);
    cr_assert_eq(p->inferred_by_category[MST_CAT_GRADIENT], 2 * P);
    cr_assert_eq(p->inferred_by_category[MST_CAT_UNKNOWN], 0);
    const struct model_alloc *live = model_find(m, 0, 1ull << 40); /* first parameter */
    cr_assert_not_null(live);
    cr_assert(live->model_flags & MODEL_ALLOC_INFERRED);
    model_free(m);
}

Test(model, refinement_when_everything_is_freed_at_exit)
{
    struct tracegen_training t = {.steps = 3,
                                  .layers = 2,
                                  .layer_bytes = 1 << 20,
                                  .activation_bytes = 1 << 19,
                                  .temporaries = 1,
                                  .unknown = 1,
                                  .free_at_exit = 1};
    tracegen_training_run(g, &t);
    struct model *m = replay(1, NULL);
    const struct model_peak *p = model_peak(m);
    cr_assert_eq(p->by_category[MST_CAT_PARAMETER], 2 * P);
    cr_assert_eq(p->by_category[MST_CAT_OPTIMIZER_STATE], 4 * P);
    cr_assert_eq(p->by_category[MST_CAT_UNKNOWN], 0);
    cr_assert_eq(model_totals(m)->live_at_exit, 0);
    model_free(m);
}

Test(model, no_refinement_keeps_unknown)
{
    training(1);
    struct model *m = replay(0, NULL);
    cr_assert_eq(model_peak(m)->by_category[MST_CAT_UNKNOWN], 8 * P + 2 * A + T);
    cr_assert_eq(model_totals(m)->inferred_allocations, 0);
    model_free(m);
}

struct counter {
    uint64_t events, allocs, frees, max_resident, stop_at;
    int ended;
};

static int count_event(void *ctx, const struct model *m, const struct model_state *st,
                       const struct model_event *ev)
{
    (void)m;
    struct counter *c = ctx;
    c->events++;
    if (ev->rec->kind == MST_REC_ALLOC) {
        c->allocs++;
        cr_assert_not_null(ev->alloc);
        cr_assert_eq(ev->alloc->addr, ev->rec->u.alloc.addr);
    }
    if (ev->rec->kind == MST_REC_FREE && ev->alloc)
        c->frees++;
    if (st->resident > c->max_resident)
        c->max_resident = st->resident;
    return c->stop_at && c->events == c->stop_at;
}

static void count_end(void *ctx, const struct model *m, const struct model_state *st)
{
    (void)m, (void)st;
    ((struct counter *)ctx)->ended = 1;
}

Test(model, callbacks_see_every_record)
{
    training(1);
    struct counter c = {0};
    struct model_callbacks cb = {.ctx = &c, .on_event = count_event, .on_end = count_end};
    struct model *m = replay(1, &cb); /* two passes: callbacks only in the second */
    cr_assert_eq(c.events, reader_records(model_reader(m)));
    cr_assert_eq(c.allocs, model_totals(m)->allocations);
    cr_assert_eq(c.frees, model_totals(m)->frees);
    cr_assert_eq(c.max_resident, model_peak(m)->bytes);
    cr_assert(c.ended);
    model_free(m);
}

Test(model, callback_stops_replay)
{
    training(0);
    struct counter c = {.stop_at = 5};
    struct model_callbacks cb = {.ctx = &c, .on_event = count_event, .on_end = count_end};
    struct model *m = replay(0, &cb);
    cr_assert_eq(c.events, 5);
    cr_assert_eq(model_totals(m)->events, 5);
    cr_assert_not(c.ended);
    model_free(m);
}

Test(model, corrupt_trace_keeps_prefix)
{
    tracegen_malloc(g, 10, th, 0x1000, 100, MST_CAT_PARAMETER, 0, 0);
    tracegen_malloc(g, 11, 77, 0x2000, 100, MST_CAT_PARAMETER, 0, 0);
    struct model *m = replay(1, NULL);
    cr_assert_eq(model_reader_status(m), READER_CORRUPT);
    cr_assert_eq(model_peak(m)->bytes, 100);
    model_free(m);
}

Test(model, text_report_mentions_the_numbers)
{
    training(0);
    struct model *m = replay(1, NULL);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    struct summary_options o = {.top = 5, .frames = 4};
    summary_print_text(f, m, &o);
    fclose(f);
    cr_assert(strstr(buf, "Peak resident 9.13 MiB"), "%s", buf);
    cr_assert(strstr(buf, "step 1, phase \"backward\""), "%s", buf);
    cr_assert(strstr(buf, "optimizer_state  4.00 MiB   43.8%"), "%s", buf);
    cr_assert(strstr(buf, "model::Linear::forward(at::Tensor const&) (libtrain.so)"), "%s", buf);
    cr_assert(strstr(buf, "gemm::workspace (libtrain.so)"), "%s", buf);
    free(buf);
    model_free(m);
}
