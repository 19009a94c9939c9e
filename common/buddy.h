/* buddy: the spill policy's sub-allocator for small allocations, as pure bookkeeping, shared by
 * the shim (backing.h keeps one per mapped chunk) and the analyzer (whatif replays it), so that
 * both place blocks, and leave holes, the same way.
 *
 * A chunk of `units` smallest blocks (a power of two, at most BUDDY_MAX_BLOCKS) holds blocks of
 * unit << 0 .. unit << (orders - 1) == the whole chunk. A take returns the lowest free block of
 * the smallest order that has one, split keeping the lower half; a freed block merges with its
 * free buddy as far up as they go. Free blocks are one bitmap per order, each starting on a
 * word, in caller-owned memory (buddy_words); a count of free blocks per order lets a take that
 * cannot succeed read no bitmap. Offsets and sizes are in units; the caller knows the bytes. */
#ifndef MEMSHIM_BUDDY_H
#define MEMSHIM_BUDDY_H

#include <stdint.h>

#define BUDDY_MIN_CLASS_SHIFT 8 /* 256 bytes: the smallest block the shim hands out */
#define BUDDY_MAX_ORDER       13
#define BUDDY_MAX_BLOCKS      (1u << BUDDY_MAX_ORDER) /* smallest blocks per chunk */
#define BUDDY_MAX_ORDERS      (BUDDY_MAX_ORDER + 1)
/* Bitmap words of the largest chunk: every order's bits, each order rounded up to a word. */
#define BUDDY_MAX_WORDS (2 * BUDDY_MAX_BLOCKS / 64 + BUDDY_MAX_ORDERS)

struct buddy {
    uint64_t *free_bits; /* buddy_words(units) words */
    uint32_t units;
    unsigned orders;
    uint32_t word[BUDDY_MAX_ORDERS];  /* first word of each order's bitmap */
    uint32_t nfree[BUDDY_MAX_ORDERS]; /* free blocks of each order */
};

/* Bytes charged for a small request in a chunk of chunk_bytes: the power of two >= bytes, at
 * least 256 and at least chunk_bytes / BUDDY_MAX_BLOCKS; 0 when that is more than half a chunk
 * (then the request gets its own range instead), or bytes is 0. */
uint64_t buddy_class_bytes(uint64_t bytes, uint64_t chunk_bytes);
/* The smallest block of a chunk of chunk_bytes (a power of two): 256 bytes, or more, so that
 * a chunk has at most BUDDY_MAX_BLOCKS of them. */
uint64_t buddy_unit(uint64_t chunk_bytes);

/* Words of bitmap a chunk of `units` needs (at most BUDDY_MAX_WORDS). */
uint32_t buddy_words(uint32_t units);
/* Start a chunk with one free block, the whole of it; bits: buddy_words(units) words. */
void buddy_init(struct buddy *b, uint64_t *bits, uint32_t units);
/* Take a free block of order k (1 << k units): its offset in units, or -1 when none is free. */
int64_t buddy_take(struct buddy *b, unsigned k);
/* Free the block of order k at offset `at` (units), merging it with its free buddies. */
void buddy_give(struct buddy *b, uint32_t at, unsigned k);

#endif /* MEMSHIM_BUDDY_H */
