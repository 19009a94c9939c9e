#include "mapping.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static struct {
    pthread_mutex_t lock;
    struct mapping *items; /* sorted by base, never overlapping */
    size_t count, cap;
    unsigned long long next_id;
} table = {.lock = PTHREAD_MUTEX_INITIALIZER};

void mapping_lock(void)
{
    pthread_mutex_lock(&table.lock);
}

void mapping_unlock(void)
{
    pthread_mutex_unlock(&table.lock);
}

/* Index of the first mapping whose base is > addr. */
static size_t upper_bound(uint64_t addr)
{
    size_t lo = 0, hi = table.count;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (table.items[mid].base <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

bool mapping_insert(struct mapping *m)
{
    if (table.count == table.cap) {
        size_t cap = table.cap ? table.cap * 2 : 256;
        struct mapping *grown = realloc(table.items, cap * sizeof(*grown));
        if (!grown)
            return false;
        table.items = grown;
        table.cap = cap;
    }
    size_t i = upper_bound(m->base);
    memmove(&table.items[i + 1], &table.items[i], (table.count - i) * sizeof(*m));
    m->id = ++table.next_id;
    table.items[i] = *m;
    table.count++;
    return true;
}

struct mapping *mapping_find(uint64_t addr)
{
    size_t i = upper_bound(addr);
    if (i == 0)
        return NULL;
    struct mapping *m = &table.items[i - 1];
    return addr - m->base < m->span ? m : NULL;
}

bool mapping_remove(uint64_t base, struct mapping *out)
{
    size_t i = upper_bound(base);
    if (i == 0 || table.items[i - 1].base != base)
        return false;
    *out = table.items[i - 1];
    memmove(&table.items[i - 1], &table.items[i], (table.count - i) * sizeof(*out));
    table.count--;
    return true;
}

bool mapping_covers(uint64_t addr, uint64_t size, int prot)
{
    uint64_t end = addr + size;
    if (end < addr)
        return false;
    while (addr < end) {
        struct mapping *m = mapping_find(addr);
        if (!m || (m->prot & prot) != prot || addr >= m->base + m->size)
            return false;
        /* Separate allocations never form one range; adjacent VMM mappings do. */
        if (m->kind != MAPPING_VMM)
            return end <= m->base + m->size;
        addr = m->base + m->size;
    }
    return true;
}

bool mapping_overlaps(uint64_t addr, uint64_t size)
{
    size_t i = upper_bound(addr + size - 1);
    if (i == 0)
        return false;
    const struct mapping *m = &table.items[i - 1];
    return m->base + m->span > addr;
}
