#include "rangeset.h"

#include <stdlib.h>
#include <string.h>

bool rangeset_init(struct rangeset *rs, uint64_t start, uint64_t size)
{
    memset(rs, 0, sizeof(*rs));
    rs->cap = 64;
    rs->free = malloc(rs->cap * sizeof(*rs->free));
    if (!rs->free)
        return false;
    rs->free[0] = (struct rangeset_extent){start, size};
    rs->count = 1;
    rs->cursor = start;
    return true;
}

void rangeset_destroy(struct rangeset *rs)
{
    free(rs->free);
    memset(rs, 0, sizeof(*rs));
}

static bool reserve_slot(struct rangeset *rs)
{
    if (rs->count < rs->cap)
        return true;
    size_t cap = rs->cap * 2;
    struct rangeset_extent *grown = realloc(rs->free, cap * sizeof(*grown));
    if (!grown)
        return false;
    rs->free = grown;
    rs->cap = cap;
    return true;
}

static void remove_at(struct rangeset *rs, size_t i)
{
    memmove(&rs->free[i], &rs->free[i + 1], (rs->count - i - 1) * sizeof(*rs->free));
    rs->count--;
}

static bool insert_at(struct rangeset *rs, size_t i, uint64_t start, uint64_t size)
{
    if (!reserve_slot(rs))
        return false;
    memmove(&rs->free[i + 1], &rs->free[i], (rs->count - i) * sizeof(*rs->free));
    rs->free[i] = (struct rangeset_extent){start, size};
    rs->count++;
    return true;
}

/* Removes [start, start + size) from extent i, which contains it. */
static bool carve(struct rangeset *rs, size_t i, uint64_t start, uint64_t size)
{
    struct rangeset_extent e = rs->free[i];
    uint64_t end = start + size, e_end = e.start + e.size;
    if (start == e.start && end == e_end) {
        remove_at(rs, i);
        return true;
    }
    if (start == e.start) {
        rs->free[i] = (struct rangeset_extent){end, e_end - end};
        return true;
    }
    if (end == e_end) {
        rs->free[i].size = start - e.start;
        return true;
    }
    if (!insert_at(rs, i + 1, end, e_end - end))
        return false;
    rs->free[i].size = start - e.start;
    return true;
}

static bool fit(const struct rangeset_extent *e, uint64_t from, uint64_t size, uint64_t align,
                uint64_t *at)
{
    uint64_t lo = e->start > from ? e->start : from;
    uint64_t a = (lo + align - 1) & ~(align - 1);
    if (a < lo || a + size < a || a + size > e->start + e->size)
        return false;
    *at = a;
    return true;
}

static bool alloc_from(struct rangeset *rs, uint64_t from, uint64_t size, uint64_t align,
                       uint64_t *out)
{
    for (size_t i = 0; i < rs->count; i++) {
        uint64_t at;
        if (rs->free[i].start + rs->free[i].size <= from)
            continue;
        if (fit(&rs->free[i], from, size, align, &at) && carve(rs, i, at, size)) {
            rs->cursor = at + size;
            *out = at;
            return true;
        }
    }
    return false;
}

bool rangeset_alloc(struct rangeset *rs, uint64_t size, uint64_t align, uint64_t *out)
{
    if (size == 0 || align == 0 || (align & (align - 1)))
        return false;
    if (alloc_from(rs, rs->cursor, size, align, out))
        return true;
    return alloc_from(rs, 0, size, align, out);
}

static size_t lower_bound(const struct rangeset *rs, uint64_t start)
{
    size_t lo = 0, hi = rs->count;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (rs->free[mid].start < start)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

bool rangeset_take(struct rangeset *rs, uint64_t start, uint64_t size)
{
    size_t i = lower_bound(rs, start + 1);
    if (i == 0 || size == 0)
        return false;
    struct rangeset_extent *e = &rs->free[i - 1];
    if (start < e->start || start + size > e->start + e->size || start + size < start)
        return false;
    return carve(rs, i - 1, start, size);
}

bool rangeset_release(struct rangeset *rs, uint64_t start, uint64_t size)
{
    size_t i = lower_bound(rs, start);
    bool join_prev = i > 0 && rs->free[i - 1].start + rs->free[i - 1].size == start;
    bool join_next = i < rs->count && rs->free[i].start == start + size;
    if ((i > 0 && rs->free[i - 1].start + rs->free[i - 1].size > start) ||
        (i < rs->count && rs->free[i].start < start + size))
        return false; /* overlaps a free range: a double release */
    if (join_prev && join_next) {
        rs->free[i - 1].size += size + rs->free[i].size;
        remove_at(rs, i);
    } else if (join_prev) {
        rs->free[i - 1].size += size;
    } else if (join_next) {
        rs->free[i].start = start;
        rs->free[i].size += size;
    } else {
        return insert_at(rs, i, start, size);
    }
    return true;
}
