/* backing: the buddy sub-allocator (pure bookkeeping, no CUDA): sizes, alignment, no overlap,
 * splitting and merging back to one free chunk, the class rule, and block tags with the walk
 * over allocated blocks. */
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
    cr_assert_eq(buddy_class_bytes(1, 2 * MIB), 256);
    cr_assert_eq(buddy_class_bytes(256, 2 * MIB), 256);
    cr_assert_eq(buddy_class_bytes(257, 2 * MIB), 512);
    cr_assert_eq(buddy_class_bytes(MIB, 2 * MIB), MIB);
    cr_assert_eq(buddy_class_bytes(MIB + 1, 2 * MIB), 0, "more than half a chunk: own range");
    cr_assert_eq(buddy_class_bytes(0, 2 * MIB), 0);
    cr_assert_eq(buddy_class_bytes(1, 64 * MIB), 64 * MIB / BACKING_MAX_BLOCKS,
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

/* Tags: set on an allocated block, cleared when it is freed, refused elsewhere; and the walk
 * over allocated blocks that a chunk's move uses to charge each block to its category. */
Test(backing, tags_and_walk)
{
    struct backing_chunk *c = new_chunk(2 * MIB);
    uint64_t a = backing_chunk_take(c, 4096), b = backing_chunk_take(c, 256),
             d = backing_chunk_take(c, 65536);
    cr_assert(a && b && d);
    cr_assert_eq(backing_chunk_tag(c, a), 0, "no tag until set");
    backing_chunk_set_tag(c, a, 4);
    backing_chunk_set_tag(c, b, 2);
    backing_chunk_set_tag(c, d, 9);
    cr_assert_eq(backing_chunk_tag(c, a), 4);
    cr_assert_eq(backing_chunk_tag(c, b), 2);
    cr_assert_eq(backing_chunk_tag(c, d), 9);
    cr_assert_eq(backing_chunk_tag(c, a + 256), -1, "inside a block: not a block");
    backing_chunk_set_tag(c, a + 256, 7);
    cr_assert_eq(backing_chunk_tag(c, a), 4, "a refused set changes nothing");
    cr_assert_eq(backing_chunk_tag(c, BASE + 2 * MIB), -1, "outside the chunk");

    uint64_t want[] = {a, b, d}, sizes[] = {4096, 256, 65536}, size = 0;
    /* Address order: a (at the base), b, then d. */
    for (int i = 0; i < 3; i++)
        for (int j = i + 1; j < 3; j++)
            if (want[j] < want[i]) {
                uint64_t t = want[i], s = sizes[i];
                want[i] = want[j];
                sizes[i] = sizes[j];
                want[j] = t;
                sizes[j] = s;
            }
    uint64_t x = backing_chunk_next(c, c->base, &size);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(x, want[i], "block %d", i);
        cr_assert_eq(size, sizes[i]);
        x = backing_chunk_next(c, x + size, &size);
    }
    cr_assert_eq(x, 0, "no more blocks");
    cr_assert_eq(backing_chunk_next(c, want[0] + 1, &size), want[1],
                 "from inside a block: the next one");

    cr_assert_eq(backing_chunk_give(c, b), 256);
    cr_assert_eq(backing_chunk_tag(c, b), -1, "freed: no tag");
    uint64_t b2 = backing_chunk_take(c, 256);
    cr_assert_eq(b2, b, "the same block again");
    cr_assert_eq(backing_chunk_tag(c, b2), 0, "a new block starts untagged");
    free(c);
}

/* The walk sums exactly the used bytes, per tag, whatever the history of takes and gives. */
Test(backing, walk_matches_used)
{
    enum { N = 2000 };
    struct backing_chunk *c = new_chunk(2 * MIB);
    static uint64_t addr[N], size[N];
    static uint8_t tag[N];
    srand(7);
    for (int round = 0; round < 10000; round++) {
        int i = rand() % N;
        if (addr[i]) {
            cr_assert_eq(backing_chunk_give(c, addr[i]), size[i]);
            addr[i] = 0;
        } else {
            uint64_t s = 256ull << (rand() % 9);
            if ((addr[i] = backing_chunk_take(c, s)) == 0)
                continue;
            size[i] = s;
            tag[i] = (uint8_t)(rand() % 10);
            backing_chunk_set_tag(c, addr[i], tag[i]);
        }
        if (round % 500)
            continue;
        uint64_t want[10] = {0}, got[10] = {0}, total = 0, s = 0;
        for (int k = 0; k < N; k++)
            if (addr[k])
                want[tag[k]] += size[k];
        for (uint64_t a = backing_chunk_next(c, c->base, &s); a;
             a = backing_chunk_next(c, a + s, &s)) {
            int t = backing_chunk_tag(c, a);
            cr_assert(t >= 0 && t < 10);
            got[t] += s;
            total += s;
        }
        cr_assert_eq(total, c->used);
        for (int t = 0; t < 10; t++)
            cr_assert_eq(got[t], want[t], "tag %d", t);
    }
    free(c);
}
