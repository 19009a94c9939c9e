/* lineage: the bookkeeping residency relies on — the live list, recycling, and the filter that
 * must never answer "nothing reads it" for a base a live lineage reads. */
#include <criterion/criterion.h>

#include "lineage.h"

static struct lineage *make(uint64_t out, uint64_t a, uint64_t b)
{
    struct lineage *l = lineage_new();
    cr_assert_not_null(l);
    l->out = out;
    l->in[l->nin++] = a;
    if (b)
        l->in[l->nin++] = b;
    lineage_link(l);
    return l;
}

static unsigned live(void)
{
    unsigned n = 0;
    for (struct lineage *l = lineage_first(); l; l = l->next)
        n++;
    return n;
}

Test(lineage, readers_are_never_missed)
{
    struct lineage *ls[300];
    for (unsigned i = 0; i < 300; i++)
        ls[i] = make(0x100000000ull + i * 0x200000ull, 0x700000000ull + i * 0x1000ull,
                     0x800000000ull + (i % 7) * 0x200000ull);
    cr_assert_eq(live(), 300);
    for (unsigned i = 0; i < 300; i++) {
        cr_assert(lineage_may_read(0x700000000ull + i * 0x1000ull));
        cr_assert(lineage_reads(ls[i], 0x700000000ull + i * 0x1000ull));
        cr_assert(!lineage_reads(ls[i], ls[i]->out));
    }
    /* Forget every other one, from the middle of the list too. */
    for (unsigned i = 0; i < 300; i += 2)
        lineage_forget(ls[i]);
    cr_assert_eq(live(), 150);
    for (unsigned i = 1; i < 300; i += 2)
        cr_assert(lineage_may_read(0x700000000ull + i * 0x1000ull));
    for (unsigned i = 1; i < 300; i += 2)
        lineage_forget(ls[i]);
    cr_assert_eq(live(), 0);
    cr_assert_null(lineage_first());
    /* With nothing live, the filter is exact: nothing may read anything. */
    for (unsigned i = 0; i < 300; i++) {
        cr_assert(!lineage_may_read(0x700000000ull + i * 0x1000ull));
        cr_assert(!lineage_may_read(0x800000000ull + (i % 7) * 0x200000ull));
    }
}

Test(lineage, records_are_recycled_zeroed)
{
    struct lineage *a = make(1, 2, 3);
    a->flops = 99;
    lineage_forget(a);
    struct lineage *b = lineage_new();
    cr_assert_eq(b, a, "the freed record comes back first");
    cr_assert_eq(b->nin, 0);
    cr_assert_eq(b->flops, 0);
    cr_assert_eq(b->out, 0);
}
