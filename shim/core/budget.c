/* budget: see budget.h. One cache line per device for the hot counters. */
#include "budget.h"

#include "compat.h"

#include <stdatomic.h>
#include <string.h>

struct budget_dev {
    _Atomic uint64_t resident; /* reserved + committed */
    _Atomic uint64_t peak;
    _Atomic uint64_t ceiling;
    _Atomic uint64_t physical;
    _Atomic uint64_t by_category[MST_CATEGORY_MAX];
} __attribute__((aligned(64)));

static struct budget_dev budget_devs[BUDGET_SLOTS];

static inline struct budget_dev *budget_dev(int slot)
{
    return slot >= 0 && slot < BUDGET_SLOTS ? &budget_devs[slot] : NULL;
}

void budget_reset(void)
{
    memset(budget_devs, 0, sizeof budget_devs);
}

void budget_clear_usage(void)
{
    for (int i = 0; i < BUDGET_SLOTS; i++) {
        struct budget_dev *d = &budget_devs[i];
        atomic_store(&d->resident, 0);
        atomic_store(&d->peak, 0);
        for (int c = 0; c < MST_CATEGORY_MAX; c++)
            atomic_store(&d->by_category[c], 0);
    }
}

void budget_set_ceiling(int slot, uint64_t ceiling)
{
    struct budget_dev *d = budget_dev(slot);
    if (d)
        atomic_store(&d->ceiling, ceiling);
}

void budget_set_physical(int slot, uint64_t physical)
{
    struct budget_dev *d = budget_dev(slot);
    if (d)
        atomic_store(&d->physical, physical);
}

uint64_t budget_ceiling(int slot)
{
    struct budget_dev *d = budget_dev(slot);
    return d ? atomic_load_explicit(&d->ceiling, memory_order_relaxed) : 0;
}

static void budget_raise_peak(struct budget_dev *d, uint64_t now)
{
    uint64_t p = atomic_load_explicit(&d->peak, memory_order_relaxed);
    while (now > p && !atomic_compare_exchange_weak_explicit(
                          &d->peak, &p, now, memory_order_relaxed, memory_order_relaxed))
        ;
}

MS_HOT int budget_reserve(int slot, uint64_t bytes)
{
    struct budget_dev *d = budget_dev(slot);
    if (!d)
        return 0;
    uint64_t ceiling = atomic_load_explicit(&d->ceiling, memory_order_relaxed);
    uint64_t now;
    if (!ceiling) {
        now = atomic_fetch_add_explicit(&d->resident, bytes, memory_order_relaxed) + bytes;
    } else {
        uint64_t cur = atomic_load_explicit(&d->resident, memory_order_relaxed);
        do {
            if (bytes > ceiling || cur > ceiling - bytes)
                return -1;
        } while (!atomic_compare_exchange_weak_explicit(
            &d->resident, &cur, cur + bytes, memory_order_relaxed, memory_order_relaxed));
        now = cur + bytes;
    }
    budget_raise_peak(d, now);
    return 0;
}

void budget_release(int slot, uint64_t bytes)
{
    struct budget_dev *d = budget_dev(slot);
    if (d)
        atomic_fetch_sub_explicit(&d->resident, bytes, memory_order_relaxed);
}

MS_HOT void budget_commit(int slot, uint8_t category, uint64_t bytes)
{
    struct budget_dev *d = budget_dev(slot);
    if (d && category < MST_CATEGORY_MAX)
        atomic_fetch_add_explicit(&d->by_category[category], bytes, memory_order_relaxed);
}

MS_HOT void budget_free(int slot, uint8_t category, uint64_t bytes)
{
    struct budget_dev *d = budget_dev(slot);
    if (!d)
        return;
    if (category < MST_CATEGORY_MAX)
        atomic_fetch_sub_explicit(&d->by_category[category], bytes, memory_order_relaxed);
    atomic_fetch_sub_explicit(&d->resident, bytes, memory_order_relaxed);
}

void budget_uncommit(int slot, uint8_t category, uint64_t bytes)
{
    struct budget_dev *d = budget_dev(slot);
    if (d && category < MST_CATEGORY_MAX)
        atomic_fetch_sub_explicit(&d->by_category[category], bytes, memory_order_relaxed);
}

void budget_snapshot(int slot, struct budget_snapshot *out)
{
    memset(out, 0, sizeof *out);
    struct budget_dev *d = budget_dev(slot);
    if (!d)
        return;
    out->ceiling = atomic_load(&d->ceiling);
    out->resident = atomic_load(&d->resident);
    out->peak = atomic_load(&d->peak);
    out->physical = atomic_load(&d->physical);
    for (int c = 0; c < MST_CATEGORY_MAX; c++)
        out->by_category[c] = atomic_load(&d->by_category[c]);
}

void budget_mem_info(int slot, size_t *free_bytes, size_t *total_bytes)
{
    struct budget_dev *d = budget_dev(slot);
    uint64_t ceiling = d ? atomic_load(&d->ceiling) : 0;
    if (!ceiling)
        return;
    uint64_t resident = atomic_load(&d->resident);
    uint64_t room = resident < ceiling ? ceiling - resident : 0;
    if (total_bytes && *total_bytes > ceiling)
        *total_bytes = (size_t)ceiling;
    if (free_bytes && *free_bytes > room)
        *free_bytes = (size_t)room;
}
