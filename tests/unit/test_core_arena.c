/* arena: blocks are zeroed, aligned as asked, and never overlap; a block larger than a chunk
 * gets a chunk of its own. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "arena.h"

static int zeroed(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return 0;
    return 1;
}

Test(arena, aligned_blocks_are_zeroed_and_apart)
{
    static const size_t aligns[] = {16, 32, 64, 128, 4096};
    unsigned char *prev = NULL;
    size_t prev_size = 0;
    for (size_t i = 0; i < sizeof aligns / sizeof *aligns; i++) {
        size_t size = 1000 + 24 * i;
        unsigned char *p = arena_alloc_aligned(size, aligns[i]);
        cr_assert_not_null(p);
        cr_assert_eq((uintptr_t)p % aligns[i], 0, "aligned to %zu", aligns[i]);
        cr_assert(zeroed(p, size));
        memset(p, 0xab, size);
        if (prev)
            cr_assert(p >= prev + prev_size || p + size <= prev, "blocks do not overlap");
        cr_assert_eq(prev ? prev[prev_size - 1] : 0xab, 0xab, "the block before is intact");
        prev = p;
        prev_size = size;
    }
}

Test(arena, a_block_larger_than_a_chunk)
{
    size_t size = (size_t)5 << 20;
    unsigned char *p = arena_alloc_aligned(size, 128);
    cr_assert_not_null(p);
    cr_assert_eq((uintptr_t)p % 128, 0);
    cr_assert(zeroed(p, size));
    p[size - 1] = 1; /* all of it is mapped */
    unsigned char *q = arena_alloc(64);
    cr_assert_not_null(q);
    cr_assert(q >= p + size || q + 64 <= p);
    cr_assert_geq(arena_bytes(), size);
}
