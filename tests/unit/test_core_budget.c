/* Budget: the ceiling is exact across threads (8 threads x 100k reserve/release pairs never
 * exceed it and end balanced), categories and peaks, and the memory-info adjustment. */
#include <criterion/criterion.h>

#include "budget.h"

#include <pthread.h>
#include <stdatomic.h>

#define THREADS 8
#define PAIRS   100000

static void reset(void)
{
    budget_reset();
}

TestSuite(budget, .init = reset);

Test(budget, ceiling_is_exact_single_thread)
{
    budget_set_ceiling(0, 1000);
    cr_assert_eq(budget_reserve(0, 600), 0);
    cr_assert_eq(budget_reserve(0, 401), -1);
    cr_assert_eq(budget_reserve(0, 400), 0);
    cr_assert_eq(budget_reserve(0, 1), -1);
    budget_release(0, 400);
    budget_commit(0, MST_CAT_ACTIVATION, 600);
    struct budget_snapshot s;
    budget_snapshot(0, &s);
    cr_assert_eq(s.resident, 600);
    cr_assert_eq(s.peak, 1000);
    cr_assert_eq(s.by_category[MST_CAT_ACTIVATION], 600);
    budget_free(0, MST_CAT_ACTIVATION, 600);
    budget_snapshot(0, &s);
    cr_assert_eq(s.resident, 0);
    cr_assert_eq(s.by_category[MST_CAT_ACTIVATION], 0);
    cr_assert_eq(budget_reserve(0, UINT64_MAX), -1, "no overflow past the ceiling");
}

Test(budget, no_ceiling_and_bad_slots)
{
    cr_assert_eq(budget_reserve(1, 1ull << 50), 0);
    cr_assert_eq(budget_reserve(-1, 5), 0, "unknown slots pass through");
    cr_assert_eq(budget_reserve(BUDGET_SLOTS, 5), 0);
}

struct worker {
    _Atomic uint64_t *over;
    _Atomic uint64_t *granted;
    int id;
};

static void *churn(void *arg)
{
    struct worker *w = arg;
    for (int i = 0; i < PAIRS; i++) {
        uint64_t bytes = 1 + (uint64_t)((i * 7919 + w->id * 104729) % 4096);
        if (budget_reserve(0, bytes) == 0) {
            struct budget_snapshot s;
            if ((i & 255) == 0) {
                budget_snapshot(0, &s);
                if (s.resident > s.ceiling)
                    atomic_fetch_add(w->over, 1);
            }
            atomic_fetch_add(w->granted, 1);
            budget_commit(0, (uint8_t)(i % MST_CATEGORY_MAX), bytes);
            budget_free(0, (uint8_t)(i % MST_CATEGORY_MAX), bytes);
        }
    }
    return NULL;
}

Test(budget, exact_across_threads)
{
    /* A ceiling small enough that threads keep colliding with it. */
    budget_set_ceiling(0, 3 * 4096);
    _Atomic uint64_t over = 0, granted = 0;
    pthread_t t[THREADS];
    struct worker w[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (struct worker){&over, &granted, i};
        pthread_create(&t[i], NULL, churn, &w[i]);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    struct budget_snapshot s;
    budget_snapshot(0, &s);
    cr_assert_eq(atomic_load(&over), 0, "resident exceeded the ceiling");
    cr_assert_leq(s.peak, 3 * 4096, "peak above the ceiling");
    cr_assert_eq(s.resident, 0, "unbalanced");
    for (int c = 0; c < MST_CATEGORY_MAX; c++)
        cr_assert_eq(s.by_category[c], 0);
    cr_assert_gt(atomic_load(&granted), 0);
}

Test(budget, mem_info_under_ceiling)
{
    size_t free_b = 10000, total = 16000;
    budget_mem_info(0, &free_b, &total);
    cr_assert_eq(total, 16000, "no ceiling: untouched");
    budget_set_ceiling(0, 8000);
    cr_assert_eq(budget_reserve(0, 3000), 0);
    budget_mem_info(0, &free_b, &total);
    cr_assert_eq(total, 8000);
    cr_assert_eq(free_b, 5000);
    free_b = 1000;
    total = 4000;
    budget_mem_info(0, &free_b, &total);
    cr_assert_eq(total, 4000, "physical smaller than the ceiling");
    cr_assert_eq(free_b, 1000, "real free smaller than the room");
    budget_mem_info(0, NULL, NULL);
    cr_assert_eq(budget_reserve(0, 6000), -1);
    budget_set_ceiling(0, 2000);
    free_b = 1000;
    budget_mem_info(0, &free_b, NULL);
    cr_assert_eq(free_b, 0, "resident above a lowered ceiling");
}
