/* rangeset: a set of free address ranges with next-fit allocation.
 * Used for device virtual addresses and for offsets in the physical-memory file. Not
 * thread-safe: callers hold their own lock. */
#ifndef SIMCU_RANGESET_H
#define SIMCU_RANGESET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rangeset_extent {
    uint64_t start;
    uint64_t size;
};

struct rangeset {
    struct rangeset_extent *free; /* sorted by start, never adjacent */
    size_t count;
    size_t cap;
    uint64_t cursor; /* next-fit: search starts here, so freed ranges are reused late */
};

/* Starts with the single free range [start, start + size). */
bool rangeset_init(struct rangeset *rs, uint64_t start, uint64_t size);
void rangeset_destroy(struct rangeset *rs);

/* Takes size bytes aligned to align (a power of two). Returns false when nothing fits. */
bool rangeset_alloc(struct rangeset *rs, uint64_t size, uint64_t align, uint64_t *out);

/* Takes exactly [start, start + size) if it is wholly free. */
bool rangeset_take(struct rangeset *rs, uint64_t start, uint64_t size);

/* Gives [start, start + size) back; it must have been taken. */
bool rangeset_release(struct rangeset *rs, uint64_t start, uint64_t size);

#endif
