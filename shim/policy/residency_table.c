/* residency_table: the ranges the shim owns, in one array sorted by address (bisection finds the
 * range holding an address); range records come from the arena and are recycled through a free
 * list, with a generation number so a stale pin is recognised. And the per-thread pins that
 * keep a range in place while a call uses it. res_lock held throughout. */
#include "residency_range.h"

#include "arena.h"

#include <string.h>

/* ---- the table (res_lock held) ---- */

static size_t res_lower(uint64_t addr)
{
    size_t lo = 0, hi = res_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (res_table[mid]->addr < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

struct res_range *res_find(uint64_t addr)
{
    size_t i = res_lower(addr + 1); /* first range starting above addr */
    if (i == 0)
        return NULL;
    struct res_range *r = res_table[i - 1];
    return addr - r->addr < r->size ? r : NULL;
}

static int res_grow(void)
{
    size_t cap = res_cap ? res_cap * 2 : 256;
    struct res_range **t = arena_map(cap * sizeof *t);
    struct victim_candidate *c = arena_map(cap * sizeof *c);
    if (!t || !c) {
        if (t)
            arena_unmap(t, cap * sizeof *t);
        if (c)
            arena_unmap(c, cap * sizeof *c);
        return -1;
    }
    if (res_table) {
        memcpy(t, res_table, res_count * sizeof *t);
        arena_unmap(res_table, res_cap * sizeof *t);
        arena_unmap(res_cands, res_cap * sizeof *c);
    }
    res_table = t;
    res_cands = c;
    res_cap = cap;
    return 0;
}

struct res_range *res_new(void)
{
    struct res_range *r = res_free_list;
    if (r) {
        res_free_list = r->next_free;
        uint64_t gen = r->gen;
        memset(r, 0, sizeof *r);
        r->gen = gen + 1;
        return r;
    }
    return arena_alloc(sizeof *r);
}

int res_insert(struct res_range *r)
{
    if (res_count == res_cap && res_grow() < 0)
        return -1;
    size_t i = res_lower(r->addr);
    memmove(&res_table[i + 1], &res_table[i], (res_count - i) * sizeof *res_table);
    res_table[i] = r;
    res_count++;
    return 0;
}

void res_forget(struct res_range *r)
{
    if (r->lin) {
        lineage_forget(r->lin);
        r->lin = NULL;
    }
}

void res_remove(struct res_range *r)
{
    res_forget(r);
    size_t i = res_lower(r->addr);
    if (i < res_count && res_table[i] == r) {
        memmove(&res_table[i], &res_table[i + 1], (res_count - i - 1) * sizeof *res_table);
        res_count--;
    }
    r->gen++;
    r->next_free = res_free_list;
    res_free_list = r;
}

/* ---- pins (res_lock held) ---- */

void res_unpin_thread(void)
{
    for (unsigned i = 0; i < res_npins; i++)
        if (res_pins[i].r->gen == res_pins[i].gen && res_pins[i].r->pins)
            res_pins[i].r->pins--;
    res_npins = 0;
}

static MS_TLS uint8_t res_exit_armed;

void res_pin(struct res_range *r)
{
    if (!res_exit_armed && res_exit_key_ok) {
        res_exit_armed = 1;
        pthread_setspecific(res_exit_key, &res_exit_armed);
    }
    if (res_npins < RES_PINS) {
        res_pins[res_npins++] = (struct res_pin){r, r->gen};
        r->pins++;
    }
}
