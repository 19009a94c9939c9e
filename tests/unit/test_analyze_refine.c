/* Lifetime rules of category refinement. */
#include <criterion/criterion.h>

#include <memshim/trace_format.h>

#include "refine.h"

static struct refine_life life(int64_t bs, enum refine_phase bp, int64_t ds, enum refine_phase dp)
{
    return (struct refine_life){.site = 1,
                                .size = 64,
                                .birth_step = bs,
                                .death_step = ds,
                                .birth_phase = bp,
                                .death_phase = dp,
                                .birth_seq = 1,
                                .death_seq = 2};
}

Test(refine, phase_classes)
{
    cr_assert_eq(refine_phase_class("forward"), REFINE_PHASE_FORWARD);
    cr_assert_eq(refine_phase_class("model.Fwd"), REFINE_PHASE_FORWARD);
    cr_assert_eq(refine_phase_class("loss.backward()"), REFINE_PHASE_BACKWARD);
    cr_assert_eq(refine_phase_class("AdamW.step"), REFINE_PHASE_OPTIMIZER);
    cr_assert_eq(refine_phase_class("optimizer"), REFINE_PHASE_OPTIMIZER);
    cr_assert_eq(refine_phase_class("data"), REFINE_PHASE_OTHER);
    cr_assert_eq(refine_phase_class(""), REFINE_PHASE_OTHER);
    cr_assert_eq(refine_phase_class(NULL), REFINE_PHASE_OTHER);
}

Test(refine, rules)
{
    struct refine_life l = life(-1, REFINE_PHASE_OTHER, 5, REFINE_PHASE_OTHER);
    l.alive_at_exit = 1;
    cr_assert_eq(refine_classify(&l), REFINE_UNTIL_STEP); /* parameter if the trace has steps */

    l = life(0, REFINE_PHASE_FORWARD, 0, REFINE_PHASE_BACKWARD);
    cr_assert_eq(refine_classify(&l), MST_CAT_ACTIVATION);

    l = life(0, REFINE_PHASE_BACKWARD, 0, REFINE_PHASE_OTHER);
    cr_assert_eq(refine_classify(&l), MST_CAT_UNKNOWN); /* no optimizer ran yet */
    l.optimizer_since_birth = 1;
    cr_assert_eq(refine_classify(&l), MST_CAT_GRADIENT);

    l = life(0, REFINE_PHASE_OPTIMIZER, 0, REFINE_PHASE_OTHER);
    l.alive_at_exit = 1;
    cr_assert_eq(refine_classify(&l), MST_CAT_OPTIMIZER_STATE);

    l = life(3, REFINE_PHASE_OPTIMIZER, 3, REFINE_PHASE_OPTIMIZER);
    l.death_seq = l.birth_seq;
    cr_assert_eq(refine_classify(&l), MST_CAT_TEMPORARY);

    l = life(3, REFINE_PHASE_FORWARD, 3, REFINE_PHASE_OTHER);
    l.alive_at_exit = 1;
    cr_assert_eq(refine_classify(&l), REFINE_NO_EVIDENCE); /* a leak says nothing */
}

Test(refine, votes_by_bytes_per_site_and_size)
{
    struct refine *r = refine_new();
    struct refine_life act = life(0, REFINE_PHASE_FORWARD, 0, REFINE_PHASE_BACKWARD);
    struct refine_life odd = life(0, REFINE_PHASE_OTHER, 1, REFINE_PHASE_OTHER);
    for (int i = 0; i < 3; i++)
        refine_observe(r, &act);
    refine_observe(r, &odd); /* same key, fits no rule: outvoted */
    odd.size = 128;
    refine_observe(r, &odd); /* its own key: stays unknown */
    struct refine_life other = act;
    other.site = 2;
    for (int i = 0; i < 5000; i++) { /* growth of the table */
        other.size = 1000 + (uint64_t)i;
        refine_observe(r, &other);
    }
    refine_decide(r, 3);
    cr_assert_eq(refine_lookup(r, 1, 64), MST_CAT_ACTIVATION);
    cr_assert_eq(refine_lookup(r, 1, 128), -1);
    cr_assert_eq(refine_lookup(r, 9, 64), -1);
    cr_assert_eq(refine_lookup(r, 2, 1000 + 4999), MST_CAT_ACTIVATION);
    cr_assert_eq(refine_inferred_keys(r), 5001);
    refine_free(r);
}

Test(refine, parameters_freed_before_exit)
{
    struct refine *r = refine_new();
    struct refine_life p = life(-1, REFINE_PHASE_OTHER, 7, REFINE_PHASE_OTHER);
    cr_assert_eq(refine_classify(&p), REFINE_UNTIL_STEP);
    refine_observe(r, &p);
    refine_observe(r, &p);
    struct refine_life early = p;
    early.site = 2;
    early.death_step = 3; /* freed mid-run: not to the end */
    refine_observe(r, &early);
    struct refine_life none = p;
    none.site = 3;
    refine_observe(r, &none);
    refine_decide(r, 7);
    cr_assert_eq(refine_lookup(r, 1, 64), MST_CAT_PARAMETER);
    cr_assert_eq(refine_lookup(r, 2, 64), -1);
    refine_free(r);
    r = refine_new();
    refine_observe(r, &none);
    struct refine_life kept = none;
    kept.site = 4;
    kept.alive_at_exit = 1;
    refine_observe(r, &kept);
    refine_decide(r, -1); /* a trace without steps says nothing about "before the first step" */
    cr_assert_eq(refine_lookup(r, 3, 64), -1);
    cr_assert_eq(refine_lookup(r, 4, 64), -1);
    refine_free(r);
    r = refine_new();
    refine_observe(r, &kept);
    refine_decide(r, 0);
    cr_assert_eq(refine_lookup(r, 4, 64), MST_CAT_PARAMETER);
    refine_free(r);
}
