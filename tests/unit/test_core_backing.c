/* backing: the buddy sub-allocator (pure bookkeeping, no CUDA): sizes, alignment, no overlap,
 * splitting and merging back to one free chunk, and the class rule. */
#include <criterion/criterion.h>

#include "backing.h"

#include <stdlib.h>
#include <string.h>

#define MIB  (1024ull * 1024)
#define BASE 0x7f0000000000ull

static struct backing_chunk *new_chunk(uint64_t bytes)
{
    struct backing_chunk *c = malloc(sizeof *c);
    cr_assert(c);
    backing_chunk_init(c, BASE, bytes);
    return c;
}

Test(backing, class_bytes)
{
    cr_assert_eq(backing_class_bytes(1, 2 * MIB), 256);
    cr_assert_eq(backing_class_bytes(256, 2 * MIB), 256);
    cr_assert_eq(backing_class_bytes(257, 2 * MIB), 512);
    cr_assert_eq(backing_class_bytes(MIB, 2 * MIB), MIB);
    cr_assert_eq(backing_class_bytes(MIB + 1, 2 * MIB), 0, "more than half a chunk: own range");
    cr_assert_eq(backing_class_bytes(0, 2 * MIB), 0);
    cr_assert_eq(backing_class_bytes(1, 64 * MIB), 64 * MIB / BACKING_MAX_BLOCKS,
                 "the smallest block grows with the chunk");
}

Test(backing, whole_chunk_halves_and_merge)
{
    struct backing_chunk *c = new_chunk(2 * MIB);
    uint64_t a = backing_chunk_take(c, MIB), b = backing_chunk_take(c, MIB);
    cr_assert_eq(a, BASE);
    cr_assert_eq(b, BASE + MIB);
    cr_assert_eq(backing_chunk_take(c, 256), 0, "full");
    cr_assert_eq(c->used, 2 * MIB);
    cr_assert_eq(backing_chunk_give(c, a), MIB);
    cr_assert_eq(backing_chunk_give(c, a), 0, "double free refused");
    cr_assert_eq(backing_chunk_give(c, b), MIB);
    cr_assert_eq(c->used, 0);
    cr_assert_eq(backing_chunk_take(c, 2 * MIB), BASE, "merged back into one block");
    free(c);
}

Test(backing, bad_requests)
{
    struct backing_chunk *c = new_chunk(2 * MIB);
    cr_assert_eq(backing_chunk_take(c, 300), 0, "not a power of two");
    cr_assert_eq(backing_chunk_take(c, 128), 0, "below the unit");
    cr_assert_eq(backing_chunk_take(c, 4 * MIB), 0, "above the chunk");
    cr_assert_eq(backing_chunk_give(c, BASE + 7), 0);
    cr_assert_eq(backing_chunk_give(c, BASE - 256), 0);
    cr_assert_eq(backing_chunk_give(c, BASE + 256), 0, "never allocated");
    free(c);
}

/* Random takes and gives of mixed sizes: blocks are aligned to their size, never overlap, the
 * used count is exact, and after freeing everything the chunk is one block again. */
Test(backing, random_mixed_sizes)
{
    enum { N = 3000 };
    struct backing_chunk *c = new_chunk(2 * MIB);
    static uint64_t addr[N], size[N];
    static unsigned char owner[2 * MIB / 256];
    srand(99);
    uint64_t used = 0;
    for (int round = 0; round < 20000; round++) {
        int i = rand() % N;
        if (addr[i]) {
            cr_assert_eq(backing_chunk_give(c, addr[i]), size[i]);
            memset(&owner[(addr[i] - BASE) / 256], 0, size[i] / 256);
            used -= size[i];
            addr[i] = 0;
        } else {
            uint64_t s = 256ull << (rand() % 9); /* 256 B .. 64 KiB */
            uint64_t a = backing_chunk_take(c, s);
            if (!a)
                continue;
            cr_assert_eq((a - BASE) % s, 0, "aligned to its size");
            for (uint64_t u = 0; u < s / 256; u++) {
                cr_assert_eq(owner[(a - BASE) / 256 + u], 0, "overlap");
                owner[(a - BASE) / 256 + u] = 1;
            }
            addr[i] = a;
            size[i] = s;
            used += s;
        }
        cr_assert_eq(c->used, used);
    }
    for (int i = 0; i < N; i++)
        if (addr[i])
            cr_assert_eq(backing_chunk_give(c, addr[i]), size[i]);
    cr_assert_eq(c->used, 0);
    cr_assert_eq(backing_chunk_take(c, 2 * MIB), BASE);
    free(c);
}
