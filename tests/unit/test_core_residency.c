/* residency on simcuda, under MEMSHIM_POLICY=spill: the shim serves allocations from its own
 * mappings; past the ceiling the least recently used range is spilled to the host, keeping its
 * contents; an operation that uses it brings it back, spilling another; a freed range leaves the
 * table. Driven the way track drives it: charge, reserve in the budget, serve, commit, and
 * say the allocation is recorded. */
#include <criterion/criterion.h>

#include "budget.h"
#include "options.h"
#include "real.h"
#include "residency.h"

#include <pthread.h>
#include <string.h>

#define MIB (1ull << 20)

static void setup(void)
{
    options_reset();
    budget_reset();
    cr_assert_eq(options_set(OPT_POLICY, 0, "spill"), 0);
    cr_assert(real_driver_load(), "simcuda's libcuda.so.1 is on the library path");
    residency_init();
}

TestSuite(residency, .init = setup);

/* One allocation as track makes it: 0 and its address when served, -1 when refused. */
static int alloc(uint64_t bytes, uint64_t *addr)
{
    uint64_t charged = residency_charge(MST_KIND_CUDA_MALLOC, 0, bytes);
    cr_assert_geq(charged, bytes, "spill serves plain allocations");
    if (budget_reserve(0, charged) < 0 && residency_reserve(0, charged) < 0)
        return -1;
    cr_assert_eq(residency_serve(0, bytes, charged, MST_CAT_UNKNOWN, addr), 0);
    budget_commit(0, MST_CAT_UNKNOWN, charged);
    residency_served(*addr); /* recorded: from now on it may move */
    return 0;
}

static struct mst_rec_summary summary(void)
{
    struct mst_rec_summary s;
    memset(&s, 0, sizeof s);
    residency_summary(&s);
    return s;
}

Test(residency, spills_the_oldest_and_restores_it_intact)
{
    cr_assert(residency_enabled());
    budget_set_ceiling(0, 6 * MIB);
    uint64_t a[4];
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(alloc(2 * MIB, &a[i]), 0);
        memset((void *)(uintptr_t)a[i], 0x11 * (i + 1), 2 * MIB);
    }
    cr_assert_eq(summary().spills, 0);

    /* Past the ceiling: the first (least recently used) goes to the host. */
    cr_assert_eq(alloc(2 * MIB, &a[3]), 0);
    struct mst_rec_summary s = summary();
    cr_assert_eq(s.spills, 1);
    cr_assert_eq(s.spilled_bytes, 2 * MIB);
    uint64_t base, size;
    int device;
    cr_assert(residency_lookup(a[0] + 100, &base, &size, &device), "a spilled range stays owned");
    cr_assert_eq(base, a[0]);
    cr_assert_eq(size, 2 * MIB);
    cr_assert_eq(device, 0);

    /* An operation reading it brings it back (spilling another) with its contents. */
    uint8_t mode = MST_ACCESS_READ;
    cr_assert_eq(residency_prepare(&a[0], &mode, 1), 0);
    s = summary();
    cr_assert_eq(s.restores, 1);
    cr_assert_eq(s.restored_bytes, 2 * MIB);
    cr_assert_eq(s.spills, 2);
    const uint8_t *p = (const uint8_t *)(uintptr_t)a[0];
    cr_assert_eq(p[0], 0x11);
    cr_assert_eq(p[2 * MIB - 1], 0x11);

    for (int i = 0; i < 4; i++)
        cr_assert_eq(residency_free(a[i], MST_CAT_UNKNOWN, 2 * MIB), 1, "the shim served it");
    cr_assert(!residency_lookup(a[0], &base, &size, &device), "a freed range leaves the table");
    cr_assert_eq(residency_access_ooms(), 0);
}

Test(residency, an_address_outside_every_range_is_not_owned)
{
    uint64_t base, size;
    int device;
    cr_assert(!residency_lookup(0x1000, &base, &size, &device));
    cr_assert_eq(residency_free(0x1000, MST_CAT_UNKNOWN, 4096), 0);
}

/* A thread whose call uses a range in host memory (the device had no room for it) until told
 * that call is done. */
struct host_user {
    uint64_t addr;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int in_call, done;
};

static void *host_user_main(void *arg)
{
    struct host_user *u = arg;
    uint8_t mode = MST_ACCESS_WRITE;
    cr_assert_eq(residency_prepare(&u->addr, &mode, 1), 0, "used in host memory");
    pthread_mutex_lock(&u->lock);
    u->in_call = 1;
    pthread_cond_broadcast(&u->cond);
    while (!u->done)
        pthread_cond_wait(&u->cond, &u->lock);
    pthread_mutex_unlock(&u->lock);
    /* The call writes after the other thread asked for the range. */
    memset((void *)(uintptr_t)u->addr, 0x22, 2 * MIB);
    residency_call_done();
    return NULL;
}

/* While one thread's call uses a range in host memory, another thread's call on the same range
 * uses it there too: bringing it home would copy it, then remap it, and whatever the first call
 * wrote after the copy would be lost. Once that call is done, the range comes home intact. */
Test(residency, a_range_in_use_in_host_memory_stays_there)
{
    budget_set_ceiling(0, 2 * MIB);
    uint64_t a, b;
    cr_assert_eq(alloc(2 * MIB, &a), 0);
    memset((void *)(uintptr_t)a, 0x11, 2 * MIB);
    cr_assert_eq(alloc(2 * MIB, &b), 0);
    cr_assert_eq(summary().spills, 1, "a went to the host to make room for b");
    uint8_t mode = MST_ACCESS_READ;
    cr_assert_eq(residency_prepare(&b, &mode, 1), 0); /* b pinned: no room for a */

    struct host_user u = {.addr = a};
    pthread_mutex_init(&u.lock, NULL);
    pthread_cond_init(&u.cond, NULL);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, host_user_main, &u), 0);
    pthread_mutex_lock(&u.lock);
    while (!u.in_call)
        pthread_cond_wait(&u.cond, &u.lock);
    pthread_mutex_unlock(&u.lock);
    uint64_t bytes;
    cr_assert_eq(residency_host_uses(&bytes), 1);

    residency_call_done(); /* b free to move: room for a, but a is in use where it is */
    cr_assert_eq(residency_prepare(&a, &mode, 1), 0);
    cr_assert_eq(summary().restores, 0, "not moved under the other thread's call");
    cr_assert_eq(residency_host_uses(&bytes), 2);
    residency_call_done();

    pthread_mutex_lock(&u.lock);
    u.done = 1;
    pthread_cond_broadcast(&u.cond);
    pthread_mutex_unlock(&u.lock);
    cr_assert_eq(pthread_join(t, NULL), 0);

    cr_assert_eq(residency_prepare(&a, &mode, 1), 0);
    struct mst_rec_summary s = summary();
    cr_assert_eq(s.restores, 1, "home once no call uses it");
    const uint8_t *p = (const uint8_t *)(uintptr_t)a;
    cr_assert_eq(p[0], 0x22, "the other call's write was kept");
    cr_assert_eq(p[2 * MIB - 1], 0x22);
    residency_call_done();
    cr_assert_eq(residency_free(a, MST_CAT_UNKNOWN, 2 * MIB), 1);
    cr_assert_eq(residency_free(b, MST_CAT_UNKNOWN, 2 * MIB), 1);
    cr_assert_eq(residency_access_ooms(), 0);
}
