/* Registry: exact-address lookups, namespaces, displacement, and 8 threads inserting and
 * removing their own keys concurrently with nothing lost or duplicated. */
#include <criterion/criterion.h>

#include "registry.h"

#include <pthread.h>

#define THREADS 8
#define PER     50000

static void reset(void)
{
    registry_reset();
}

TestSuite(registry, .init = reset);

Test(registry, insert_lookup_remove)
{
    struct registry_entry e = {.addr = 0x7f0000001000, .size = 4096, .site = 3, .category = 4};
    cr_assert_eq(registry_insert(REGISTRY_ADDR, &e, NULL), 0);
    struct registry_entry out;
    cr_assert_eq(registry_lookup(REGISTRY_ADDR, e.addr, &out), 1);
    cr_assert_eq(out.size, 4096);
    cr_assert_eq(out.site, 3);
    cr_assert_eq(registry_lookup(REGISTRY_ADDR, e.addr + 1, &out), 0, "exact addresses only");
    cr_assert_eq(registry_lookup(REGISTRY_HANDLE, e.addr, &out), 0, "namespaces are apart");
    cr_assert_eq(registry_count(REGISTRY_ADDR), 1);
    cr_assert_eq(registry_remove(REGISTRY_ADDR, e.addr, &out), 1);
    cr_assert_eq(registry_remove(REGISTRY_ADDR, e.addr, &out), 0, "unknown after removal");
    cr_assert_eq(registry_count(REGISTRY_ADDR), 0);
}

Test(registry, displaced_entry_is_returned)
{
    struct registry_entry a = {.addr = 0x1000, .size = 10}, b = {.addr = 0x1000, .size = 20};
    struct registry_entry old;
    cr_assert_eq(registry_insert(REGISTRY_ADDR, &a, &old), 0);
    cr_assert_eq(registry_insert(REGISTRY_ADDR, &b, &old), 1);
    cr_assert_eq(old.size, 10);
    cr_assert_eq(registry_count(REGISTRY_ADDR), 1);
}

static void sum_sizes(const struct registry_entry *e, void *ctx)
{
    *(uint64_t *)ctx += e->size;
}

static void *churn(void *arg)
{
    uintptr_t id = (uintptr_t)arg;
    for (uint64_t i = 0; i < PER; i++) {
        /* Device-like addresses: 512-byte aligned, threads interleaved. */
        uint64_t addr = 0x700000000000ull + ((i * THREADS + id) << 9);
        struct registry_entry e = {.addr = addr, .size = i + 1, .device = (uint8_t)id};
        if (registry_insert(REGISTRY_ADDR, &e, NULL) != 0)
            return (void *)1;
        if (i % 2 == 1) {
            struct registry_entry out;
            uint64_t prev = addr - (THREADS << 9);
            if (registry_remove(REGISTRY_ADDR, prev, &out) != 1 || out.size != i ||
                out.device != id)
                return (void *)2;
        }
    }
    return NULL;
}

Test(registry, eight_threads)
{
    pthread_t t[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, churn, (void *)i);
    for (int i = 0; i < THREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        cr_assert_null(r, "thread %d failed (%p)", i, r);
    }
    cr_assert_eq(registry_count(REGISTRY_ADDR), THREADS * PER / 2);
    uint64_t sum = 0, want = 0;
    registry_foreach(REGISTRY_ADDR, sum_sizes, &sum);
    for (uint64_t i = 1; i < PER; i += 2)
        want += i + 1; /* odd i survive, size i + 1 */
    cr_assert_eq(sum, want * THREADS);
}
