/* buddy: a binary buddy system over caller-owned bitmaps. */
#include "buddy.h"

#include <string.h>

uint64_t buddy_class_bytes(uint64_t bytes, uint64_t chunk_bytes)
{
    if (bytes == 0 || chunk_bytes == 0)
        return 0;
    uint64_t c = 1ull << BUDDY_MIN_CLASS_SHIFT;
    uint64_t floor = chunk_bytes / BUDDY_MAX_BLOCKS;
    while (c < bytes || c < floor) {
        if (c > chunk_bytes / 2)
            return 0;
        c <<= 1;
    }
    return c <= chunk_bytes / 2 ? c : 0;
}

uint64_t buddy_unit(uint64_t chunk_bytes)
{
    uint64_t unit = 1ull << BUDDY_MIN_CLASS_SHIFT;
    while (chunk_bytes / unit > BUDDY_MAX_BLOCKS)
        unit <<= 1;
    return unit;
}

uint32_t buddy_words(uint32_t units)
{
    uint32_t w = 0;
    for (uint32_t n = units; n; n >>= 1)
        w += (n + 63) / 64;
    return w;
}

static int bit_of(const struct buddy *b, unsigned o, uint32_t i)
{
    return (int)((b->free_bits[b->word[o] + i / 64] >> (i % 64)) & 1);
}

static void bit_put(struct buddy *b, unsigned o, uint32_t i, int v)
{
    uint64_t *w = &b->free_bits[b->word[o] + i / 64], bit = 1ull << (i % 64);
    if (!(*w & bit) != !v)
        b->nfree[o] = v ? b->nfree[o] + 1 : b->nfree[o] - 1;
    *w = v ? *w | bit : *w & ~bit;
}

void buddy_init(struct buddy *b, uint64_t *bits, uint32_t units)
{
    memset(b, 0, sizeof *b);
    b->free_bits = bits;
    b->units = units;
    uint32_t w = 0;
    for (unsigned o = 0; (units >> o) != 0; o++) {
        b->word[o] = w;
        w += ((units >> o) + 63) / 64;
        b->orders = o + 1;
    }
    memset(bits, 0, w * sizeof *bits);
    bit_put(b, b->orders - 1, 0, 1); /* the whole chunk: one free block */
}

int64_t buddy_take(struct buddy *b, unsigned k)
{
    for (unsigned j = k; j < b->orders; j++) {
        if (!b->nfree[j])
            continue;
        uint32_t n = b->units >> j, nw = (n + 63) / 64;
        for (uint32_t wi = 0; wi < nw; wi++) {
            uint64_t w = b->free_bits[b->word[j] + wi];
            if (!w)
                continue;
            uint32_t idx = wi * 64 + (uint32_t)__builtin_ctzll(w);
            bit_put(b, j, idx, 0);
            while (j > k) { /* split: keep the lower half, free the upper */
                j--;
                idx *= 2;
                bit_put(b, j, idx + 1, 1);
            }
            return (int64_t)idx << k;
        }
    }
    return -1;
}

void buddy_give(struct buddy *b, uint32_t at, unsigned k)
{
    uint32_t idx = at >> k;
    while (k + 1 < b->orders && bit_of(b, k, idx ^ 1)) { /* merge with a free buddy */
        bit_put(b, k, idx ^ 1, 0);
        idx /= 2;
        k++;
    }
    bit_put(b, k, idx, 1);
}
