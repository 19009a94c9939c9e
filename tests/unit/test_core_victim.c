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

/* ---- victim_choose_dtr: cost / (bytes * age), lowest first ---- */

static struct victim_candidate dtr(uint64_t id, uint64_t bytes, uint64_t tick, uint64_t cost,
                                   uint8_t in_use)
{
    return (struct victim_candidate){
        .id = id, .bytes = bytes, .last_access = tick, .in_use = in_use, .cost = cost};
}

Test(victim_dtr, cheap_recent_before_costly_old)
{
    /* now 100. id 1: 1000 / (8 MiB * 11) = 90.9 per MiB; id 2: 100000 / (8 MiB * 51) = 1961
     * per MiB. LRU would take 2; DTR takes the cheap one although it is more recent. */
    struct victim_candidate c[] = {dtr(2, 8 * MIB, 50, 100000, 0), dtr(1, 8 * MIB, 90, 1000, 0)};
    uint64_t got = 0;
    size_t k = victim_choose_dtr(c, 2, 8 * MIB, 100, &got);
    cr_assert_eq(k, 1);
    cr_assert_eq(c[0].id, 1);
    cr_assert_eq(got, 8 * MIB);
}

Test(victim_dtr, forecast_replaces_staleness)
{
    /* now 100, same cost and size: id 1 is the older, but id 2 is not needed for 400 ticks
     * against 10: with forecasts the one needed last goes first. */
    struct victim_candidate c[] = {dtr(1, 4 * MIB, 10, 500, 0), dtr(2, 4 * MIB, 90, 500, 0)};
    c[0].next_use = 110;
    c[1].next_use = 500;
    size_t k = victim_choose_dtr(c, 2, 4 * MIB, 100, NULL);
    cr_assert_eq(k, 1);
    cr_assert_eq(c[0].id, 2);
}

Test(victim_dtr, older_first_at_equal_cost_and_size)
{
    struct victim_candidate c[] = {dtr(1, 4 * MIB, 30, 500, 0), dtr(2, 4 * MIB, 10, 500, 0),
                                   dtr(3, 4 * MIB, 20, 500, 0)};
    size_t k = victim_choose_dtr(c, 3, 12 * MIB, 40, NULL);
    cr_assert_eq(k, 3);
    cr_assert_eq(c[0].id, 2); /* age 31 */
    cr_assert_eq(c[1].id, 3); /* age 21 */
    cr_assert_eq(c[2].id, 1); /* age 11 */
}

Test(victim_dtr, larger_first_at_equal_cost_and_age)
{
    /* same cost: 16 MiB frees more per unit of cost */
    struct victim_candidate c[] = {dtr(1, 4 * MIB, 5, 800, 0), dtr(2, 16 * MIB, 5, 800, 0)};
    uint64_t got = 0;
    size_t k = victim_choose_dtr(c, 2, 1, 5, &got);
    cr_assert_eq(k, 1);
    cr_assert_eq(c[0].id, 2);
    cr_assert_eq(got, 16 * MIB);
}

Test(victim_dtr, hand_computed_order_and_stop_at_need)
{
    /* now 10. Scores (cost / (MiB * age)): a 60/(2*5)=6, b 30/(1*10)=3, c 80/(4*1)=20,
     * d 0 (free to have back), e in use. need 3 MiB: d (1 MiB), b (1 MiB), a (2 MiB) -> 4. */
    struct victim_candidate c[] = {
        dtr(10, 2 * MIB, 6, 60, 0), dtr(11, 1 * MIB, 1, 30, 0), dtr(12, 4 * MIB, 10, 80, 0),
        dtr(13, 1 * MIB, 9, 0, 0),  dtr(14, 64 * MIB, 0, 0, 1),
    };
    uint64_t got = 0;
    size_t k = victim_choose_dtr(c, 5, 3 * MIB, 10, &got);
    cr_assert_eq(k, 3);
    cr_assert_eq(c[0].id, 13);
    cr_assert_eq(c[1].id, 11);
    cr_assert_eq(c[2].id, 10);
    cr_assert_eq(got, 4 * MIB);
    cr_assert_eq(c[3].id, 12, "the rest follow in score order");
    cr_assert_eq(c[4].id, 14, "in use: last");
}

Test(victim_dtr, equal_scores_by_size_then_id)
{
    /* 2/(2*1) == 1/(1*1) == 4/(2*2): equal scores; bytes desc, then id asc */
    struct victim_candidate c[] = {dtr(7, 1, 5, 1, 0), dtr(9, 2, 5, 2, 0), dtr(3, 2, 4, 4, 0)};
    size_t k = victim_choose_dtr(c, 3, 5, 5, NULL);
    cr_assert_eq(k, 3);
    cr_assert_eq(c[0].id, 3);
    cr_assert_eq(c[1].id, 9);
    cr_assert_eq(c[2].id, 7);
}

Test(victim_dtr, not_enough_room_returns_all_eligible)
{
    struct victim_candidate c[] = {dtr(1, 4 * MIB, 1, 10, 1), dtr(2, 4 * MIB, 2, 10, 0),
                                   dtr(3, 0, 0, 0, 0), dtr(4, 2 * MIB, 2, 10, 0)};
    uint64_t got = 0;
    size_t k = victim_choose_dtr(c, 4, 8 * MIB, 3, &got);
    cr_assert_eq(k, 2);
    cr_assert_eq(got, 6 * MIB);
    for (size_t i = 0; i < k; i++)
        cr_assert(c[i].id == 2 || c[i].id == 4);
}

Test(victim_dtr, trivial_inputs_and_future_ticks)
{
    uint64_t got = 7;
    cr_assert_eq(victim_choose_dtr(NULL, 0, 5, 1, &got), 0);
    cr_assert_eq(got, 0);
    struct victim_candidate c[] = {dtr(1, 4, 1, 1, 0)};
    cr_assert_eq(victim_choose_dtr(c, 1, 0, 1, &got), 0);
    cr_assert_eq(got, 0);
    cr_assert_eq(victim_choose_dtr(c, 1, 4, 1, NULL), 1);
    /* last_access after now counts as now (age 1): 10/(1*1) beats 30/(1*2) = 15 */
    struct victim_candidate d[] = {dtr(1, 1, 9, 30, 0), dtr(2, 1, 50, 10, 0)};
    cr_assert_eq(victim_choose_dtr(d, 2, 1, 10, NULL), 1);
    cr_assert_eq(d[0].id, 2);
}

Test(victim_dtr, extreme_values_compare_exactly)
{
    /* Products far beyond 128 bits: cost 2^64-1, 2^60 bytes, age 2^63. a's score is exactly
     * half of b's; a double would still order these, but the ties below it would not. */
    uint64_t now = UINT64_MAX;
    struct victim_candidate c[] = {dtr(1, 1ull << 60, now - (1ull << 62) + 1, UINT64_MAX, 0),
                                   dtr(2, 1ull << 60, now - (1ull << 63) + 1, UINT64_MAX, 0),
                                   dtr(3, 1ull << 59, now - (1ull << 63) + 1, UINT64_MAX / 2, 0),
                                   dtr(4, 1, 0, UINT64_MAX, 0)};
    size_t k = victim_choose_dtr(c, 4, UINT64_MAX, now, NULL);
    cr_assert_eq(k, 4);
    /* 2: M/(2^60*2^63); 3: (M/2)/(2^59*2^63) = M/(2^60*2^63) (a hair less: M/2 rounds down);
     * 1: M/(2^60*2^62); 4: M/(1*2^64 saturated) */
    cr_assert_eq(c[0].id, 3);
    cr_assert_eq(c[1].id, 2);
    cr_assert_eq(c[2].id, 1);
    cr_assert_eq(c[3].id, 4);
}

Test(victim_dtr, action_travels_and_victim_choose_ignores_cost)
{
    struct victim_candidate c[] = {dtr(1, 4 * MIB, 1, 999, 0), dtr(2, 4 * MIB, 2, 1, 0)};
    c[0].action = VICTIM_RECOMPUTE;
    c[1].action = VICTIM_SPILL;
    size_t k = victim_choose_dtr(c, 2, 8 * MIB, 3, NULL);
    cr_assert_eq(k, 2);
    cr_assert_eq(c[0].id, 2);
    cr_assert_eq(c[0].action, VICTIM_SPILL);
    cr_assert_eq(c[1].action, VICTIM_RECOMPUTE);
    cr_assert_eq(c[1].cost, 999);

    /* victim_choose: the same set with and without costs gives the same answer */
    enum { N = 64 };
    static struct victim_candidate a[N], b[N];
    srand(99);
    for (int i = 0; i < N; i++) {
        a[i] = cand((uint64_t)i + 1, (uint64_t)(1 + rand() % 16) * MIB, (uint64_t)(rand() % 20),
                    (uint8_t)(rand() % 6 == 0));
        b[i] = a[i];
        b[i].cost = (uint64_t)rand();
        b[i].action = (uint8_t)(rand() % 2);
    }
    uint64_t ga = 0, gb = 0;
    size_t ka = victim_choose(a, N, 40 * MIB, &ga), kb = victim_choose(b, N, 40 * MIB, &gb);
    cr_assert_eq(ka, kb);
    cr_assert_eq(ga, gb);
    for (size_t i = 0; i < ka; i++)
        cr_assert_eq(a[i].id, b[i].id);
}

/* Exact score comparison for the property test: a's score <= b's. */
static int score_leq(const struct victim_candidate *a, const struct victim_candidate *b,
                     uint64_t now)
{
    uint64_t aa = a->last_access >= now ? 1 : now - a->last_access + 1;
    uint64_t ab = b->last_access >= now ? 1 : now - b->last_access + 1;
    long double l = (long double)a->cost * b->bytes * ab, r = (long double)b->cost * a->bytes * aa;
    return l <= r * (1 + 1e-15L); /* random inputs below stay far from long double's limits */
}

/* Random sets: covers need when it can, never an in-use or empty one, minimal prefix, score
 * order, and the same answer in any input order. */
Test(victim_dtr, properties_on_random_sets)
{
    enum { N = 150 };
    static struct victim_candidate base[N], c[N];
    srand(4321);
    for (int trial = 0; trial < 200; trial++) {
        int n = 1 + rand() % N;
        uint64_t now = 1000 + (uint64_t)(rand() % 1000), eligible_bytes = 0;
        for (int i = 0; i < n; i++) {
            base[i] = dtr((uint64_t)i + 1, (uint64_t)(rand() % 8) * MIB / 2,
                          now - (uint64_t)(rand() % 1200), (uint64_t)(rand() % 4) * 1000,
                          (uint8_t)(rand() % 4 == 0 ? 1 + rand() % 3 : 0));
            if (!base[i].in_use)
                eligible_bytes += base[i].bytes;
        }
        uint64_t need = (uint64_t)(rand() % (64 + n)) * MIB / 4 + 1;
        memcpy(c, base, sizeof c);
        uint64_t want_bytes = 0;
        size_t want = victim_choose_dtr(c, (size_t)n, need, now, &want_bytes);
        uint64_t ids[N], sum = 0;
        for (size_t i = 0; i < want; i++) {
            ids[i] = c[i].id;
            sum += c[i].bytes;
            cr_assert_eq(base[c[i].id - 1].in_use, 0, "trial %d: in use chosen", trial);
            cr_assert_gt(c[i].bytes, 0);
            if (i > 0)
                cr_assert(score_leq(&c[i - 1], &c[i], now), "trial %d: score order", trial);
        }
        cr_assert_eq(sum, want_bytes);
        if (eligible_bytes >= need) {
            cr_assert_geq(want_bytes, need, "trial %d: need covered", trial);
            cr_assert_lt(want_bytes - c[want - 1].bytes, need, "trial %d: minimal", trial);
        } else {
            cr_assert_eq(want_bytes, eligible_bytes, "trial %d: all eligible", trial);
        }
        /* every eligible candidate left scores no lower than the last victim */
        for (size_t i = want; want > 0 && i < (size_t)n; i++)
            if (!c[i].in_use && c[i].bytes)
                cr_assert(score_leq(&c[want - 1], &c[i], now), "trial %d: skipped lower", trial);
        for (int round = 0; round < 5; round++) {
            memcpy(c, base, sizeof c);
            for (int i = n - 1; i > 0; i--) {
                int j = rand() % (i + 1);
                struct victim_candidate t = c[i];
                c[i] = c[j];
                c[j] = t;
            }
            uint64_t got = 0;
            size_t k = victim_choose_dtr(c, (size_t)n, need, now, &got);
            cr_assert_eq(k, want);
            cr_assert_eq(got, want_bytes);
            for (size_t i = 0; i < k; i++)
                cr_assert_eq(c[i].id, ids[i], "trial %d: input order matters", trial);
        }
    }
}
