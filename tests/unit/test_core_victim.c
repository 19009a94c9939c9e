/* victim: the documented rule (LRU, never in use, prefer large), its determinism under input
 * order, and the out-of-room answer. */
#include <criterion/criterion.h>

#include "victim.h"

#include <stdlib.h>
#include <string.h>

#define MIB (1024ull * 1024)

static struct victim_candidate cand(uint64_t id, uint64_t bytes, uint64_t tick, uint8_t in_use)
{
    return (struct victim_candidate){
        .id = id, .bytes = bytes, .last_access = tick, .in_use = in_use};
}

Test(victim, least_recently_used_first)
{
    struct victim_candidate c[] = {cand(1, 8 * MIB, 30, 0), cand(2, 8 * MIB, 10, 0),
                                   cand(3, 8 * MIB, 20, 0)};
    uint64_t got = 0;
    size_t k = victim_choose(c, 3, 10 * MIB, &got);
    cr_assert_eq(k, 2);
    cr_assert_eq(c[0].id, 2);
    cr_assert_eq(c[1].id, 3);
    cr_assert_eq(got, 16 * MIB);
    cr_assert_eq(c[0].in_use, 0, "marks are cleared");
    cr_assert_eq(c[1].in_use, 0);
}

Test(victim, never_in_use)
{
    struct victim_candidate c[] = {cand(1, 64 * MIB, 1, 1), cand(2, 4 * MIB, 5, 0),
                                   cand(3, 4 * MIB, 6, 0)};
    uint64_t got = 0;
    size_t k = victim_choose(c, 3, 6 * MIB, &got);
    cr_assert_eq(k, 2);
    for (size_t i = 0; i < k; i++)
        cr_assert_neq(c[i].id, 1, "the current call's allocation is never chosen");
    cr_assert_eq(got, 8 * MIB);
}

Test(victim, prefers_large_over_slightly_older_small)
{
    /* need 16 MiB: 1 MiB (oldest) is below 16/4 and is passed over; 32 MiB covers it alone. */
    struct victim_candidate c[] = {cand(1, 1 * MIB, 1, 0), cand(2, 32 * MIB, 2, 0),
                                   cand(3, 16 * MIB, 3, 0)};
    uint64_t got = 0;
    size_t k = victim_choose(c, 3, 16 * MIB, &got);
    cr_assert_eq(k, 1);
    cr_assert_eq(c[0].id, 2);
    cr_assert_eq(got, 32 * MIB);
}

Test(victim, threshold_follows_remaining)
{
    /* need 16: take 12 (>= 4); remaining 4 -> 1 MiB qualifies (>= 1). */
    struct victim_candidate c[] = {cand(1, 12 * MIB, 1, 0), cand(2, 1 * MIB, 2, 0),
                                   cand(3, 3 * MIB, 3, 0), cand(4, 8 * MIB, 4, 0)};
    uint64_t got = 0;
    size_t k = victim_choose(c, 4, 16 * MIB, &got);
    cr_assert_eq(k, 3);
    cr_assert_eq(c[0].id, 1);
    cr_assert_eq(c[1].id, 2);
    cr_assert_eq(c[2].id, 3);
    cr_assert_eq(got, 16 * MIB);
}

Test(victim, second_pass_takes_small_ones)
{
    /* Only small ones: none is >= need/4 (1.25 MiB), the second pass takes them in LRU order. */
    struct victim_candidate c[] = {cand(1, 1 * MIB, 3, 0), cand(2, 1 * MIB, 1, 0),
                                   cand(3, 1 * MIB, 2, 0), cand(4, 1 * MIB, 4, 0),
                                   cand(5, 1 * MIB, 6, 0), cand(6, 1 * MIB, 5, 0)};
    uint64_t got = 0;
    size_t k = victim_choose(c, 6, 5 * MIB, &got);
    cr_assert_eq(k, 5);
    cr_assert_eq(got, 5 * MIB);
    cr_assert_eq(c[0].id, 2);
    cr_assert_eq(c[1].id, 3);
    cr_assert_eq(c[2].id, 1);
    cr_assert_eq(c[3].id, 4);
    cr_assert_eq(c[4].id, 6);
    cr_assert_eq(c[5].id, 5);
}

Test(victim, mixed_passes_order)
{
    /* need 20, LRU order 2,1,3,4. Pass 1: 8 >= 5 taken (remaining 12, threshold 3); 2 skipped;
     * 4 taken (remaining 8, threshold 2); 1 skipped. Pass 2 takes 1 then 4 in LRU order. All
     * eligible bytes (15) are below need. */
    struct victim_candidate c[] = {cand(1, 2 * MIB, 2, 0), cand(2, 8 * MIB, 1, 0),
                                   cand(3, 4 * MIB, 3, 0), cand(4, 1 * MIB, 4, 0)};
    uint64_t got = 0;
    size_t k = victim_choose(c, 4, 20 * MIB, &got);
    cr_assert_eq(k, 4);
    cr_assert_eq(got, 15 * MIB, "not enough: everything eligible, total below need");
    cr_assert_eq(c[0].id, 2);
    cr_assert_eq(c[1].id, 3);
    cr_assert_eq(c[2].id, 1);
    cr_assert_eq(c[3].id, 4);
}

Test(victim, skipped_then_second_pass)
{
    /* need 10: oldest 1 MiB < 2.5 skipped; 8 MiB taken (remaining 2 -> threshold 0.5 MiB);
     * 1 MiB (tick 3) qualifies now; remaining 1: 1 MiB (tick 4) taken. The oldest stays. */
    struct victim_candidate c[] = {cand(1, 1 * MIB, 1, 0), cand(2, 8 * MIB, 2, 0),
                                   cand(3, 1 * MIB, 3, 0), cand(4, 1 * MIB, 4, 0)};
    uint64_t got = 0;
    size_t k = victim_choose(c, 4, 10 * MIB, &got);
    cr_assert_eq(k, 3);
    cr_assert_eq(c[0].id, 2);
    cr_assert_eq(c[1].id, 3);
    cr_assert_eq(c[2].id, 4);
    cr_assert_eq(got, 10 * MIB);
    cr_assert_eq(c[3].id, 1);
}

Test(victim, not_enough_room)
{
    struct victim_candidate c[] = {cand(1, 4 * MIB, 1, 1), cand(2, 4 * MIB, 2, 0),
                                   cand(3, 0, 0, 0)};
    uint64_t got = 1;
    size_t k = victim_choose(c, 3, 8 * MIB, &got);
    cr_assert_eq(k, 1);
    cr_assert_eq(c[0].id, 2);
    cr_assert_lt(got, 8 * MIB);
}

Test(victim, trivial_inputs)
{
    uint64_t got = 7;
    cr_assert_eq(victim_choose(NULL, 0, 5, &got), 0);
    cr_assert_eq(got, 0);
    struct victim_candidate c[] = {cand(1, 4, 1, 0)};
    cr_assert_eq(victim_choose(c, 1, 0, &got), 0);
    cr_assert_eq(got, 0);
    cr_assert_eq(victim_choose(c, 1, 4, NULL), 1);
}

Test(victim, ties_broken_by_size_then_id)
{
    struct victim_candidate c[] = {cand(9, 4 * MIB, 5, 0), cand(3, 8 * MIB, 5, 0),
                                   cand(2, 4 * MIB, 5, 0)};
    size_t k = victim_choose(c, 3, 16 * MIB, NULL);
    cr_assert_eq(k, 3);
    cr_assert_eq(c[0].id, 3);
    cr_assert_eq(c[1].id, 2);
    cr_assert_eq(c[2].id, 9);
}

/* Same set in many input orders: same victims in the same order. */
Test(victim, independent_of_input_order)
{
    enum { N = 200 };
    static struct victim_candidate base[N], c[N];
    srand(1234);
    for (int i = 0; i < N; i++)
        base[i] = cand((uint64_t)i + 1, (uint64_t)(1 + rand() % 64) * MIB / 2,
                       (uint64_t)(rand() % 50), (uint8_t)(rand() % 5 == 0));
    memcpy(c, base, sizeof c);
    uint64_t want_bytes = 0;
    size_t want = victim_choose(c, N, 300 * MIB, &want_bytes);
    uint64_t ids[N];
    for (size_t i = 0; i < want; i++)
        ids[i] = c[i].id;
    cr_assert_geq(want_bytes, 300 * MIB);
    for (int round = 0; round < 20; round++) {
        memcpy(c, base, sizeof c);
        for (int i = N - 1; i > 0; i--) {
            int j = rand() % (i + 1);
            struct victim_candidate t = c[i];
            c[i] = c[j];
            c[j] = t;
        }
        uint64_t got = 0;
        size_t k = victim_choose(c, N, 300 * MIB, &got);
        cr_assert_eq(k, want);
        cr_assert_eq(got, want_bytes);
        for (size_t i = 0; i < k; i++) {
            cr_assert_eq(c[i].id, ids[i]);
            cr_assert_eq(base[c[i].id - 1].in_use, 0);
        }
        /* Every victim's removal was needed: without the last one, need is not met. */
        cr_assert_lt(got - c[k - 1].bytes, 300 * MIB);
    }
}
