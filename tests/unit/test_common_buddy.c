/* common/buddy: the placement both the shim's spill backing and whatif's replay rely on —
 * lowest free block of the smallest order that has one, split keeping the lower half, merge
 * with a free buddy — and the class rule. Pure: no CUDA. */
#include <criterion/criterion.h>

#include "buddy.h"

#define UNITS 16u

static struct buddy b;
static uint64_t bits[BUDDY_MAX_WORDS];

Test(buddy, words_and_unit)
{
    cr_assert_eq(buddy_words(16), 5, "one word per order of 16, 8, 4, 2, 1 blocks");
    cr_assert_eq(buddy_words(BUDDY_MAX_BLOCKS) <= BUDDY_MAX_WORDS, 1);
    cr_assert_eq(buddy_unit(2ull << 20), 256);
    cr_assert_eq(buddy_unit(64ull << 20), (64ull << 20) / BUDDY_MAX_BLOCKS);
}

Test(buddy, lowest_block_first_and_split_keeps_lower_half)
{
    buddy_init(&b, bits, UNITS);
    cr_assert_eq(b.orders, 5);
    cr_assert_eq(buddy_take(&b, 0), 0);
    cr_assert_eq(buddy_take(&b, 0), 1, "the buddy left free by the split");
    cr_assert_eq(buddy_take(&b, 1), 2);
    cr_assert_eq(buddy_take(&b, 2), 4);
    cr_assert_eq(buddy_take(&b, 3), 8);
    cr_assert_eq(buddy_take(&b, 0), -1, "full");
}

Test(buddy, freed_blocks_merge_back_to_the_whole_chunk)
{
    buddy_init(&b, bits, UNITS);
    int64_t a = buddy_take(&b, 0), c = buddy_take(&b, 2), d = buddy_take(&b, 0);
    cr_assert(a >= 0 && c >= 0 && d >= 0);
    cr_assert_eq(buddy_take(&b, 4), -1, "the whole chunk is not free");
    buddy_give(&b, (uint32_t)d, 0);
    buddy_give(&b, (uint32_t)a, 0);
    buddy_give(&b, (uint32_t)c, 2);
    cr_assert_eq(b.nfree[4], 1);
    for (unsigned o = 0; o < 4; o++)
        cr_assert_eq(b.nfree[o], 0, "order %u merged away", o);
    cr_assert_eq(buddy_take(&b, 4), 0);
}

Test(buddy, a_free_block_whose_buddy_is_used_cannot_serve_a_larger_request)
{
    buddy_init(&b, bits, 4);
    int64_t x = buddy_take(&b, 0), y = buddy_take(&b, 0);
    cr_assert_eq(buddy_take(&b, 1), 2);
    buddy_give(&b, (uint32_t)x, 0);
    cr_assert_eq(buddy_take(&b, 1), -1, "unit 0 is free but unit 1 is not");
    buddy_give(&b, (uint32_t)y, 0);
    cr_assert_eq(buddy_take(&b, 1), 0);
}

Test(buddy, class_bytes)
{
    cr_assert_eq(buddy_class_bytes(1, 2u << 20), 256);
    cr_assert_eq(buddy_class_bytes(257, 2u << 20), 512);
    cr_assert_eq(buddy_class_bytes((1u << 20) + 1, 2u << 20), 0, "over half a chunk");
    cr_assert_eq(buddy_class_bytes(0, 2u << 20), 0);
}
