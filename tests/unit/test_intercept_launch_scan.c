/* launch_scan: the bounds merged into one range only where that test is the two ranges' own,
 * and the AVX2 and AVX-512 tests pass the words the scalar one does, reading no word past the
 * run. */
#include <criterion/criterion.h>
#include <sys/mman.h>
#include <unistd.h>

#include "launch_scan.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Two ranges of a small space (so that they often touch, overlap or are empty) placed
 * anywhere in the 64 bits: the test near 0 and near UINT64_MAX is where wrapping matters. */
static void random_bounds(uint64_t r[4])
{
    uint64_t base = next() % 4 == 0 ? 0 : next() % 4 == 0 ? UINT64_MAX - 64 : next();
    for (int i = 0; i < 4; i++)
        r[i] = base + next() % 48;
    if (r[1] < r[0])
        r[1] = r[0];
    if (r[3] < r[2])
        r[3] = r[2];
}

static int in_two(const uint64_t r[4], uint64_t v)
{
    return (v - r[0] < r[1] - r[0]) | (v - r[2] < r[3] - r[2]);
}

Test(launch_scan, one_range_only_where_it_tests_the_same)
{
    for (int t = 0; t < 20000; t++) {
        uint64_t r[4];
        random_bounds(r);
        struct launch_bounds b;
        launch_bounds_of(&b, r[0], r[1], r[2], r[3]);
        if (b.one)
            cr_assert(b.lo == b.map_lo && b.span == b.map_span);
        for (uint64_t v = r[0] - 2; v != r[3] + 50; v++)
            cr_assert_eq(launch_may_hit(&b, v, 0), in_two(r, v), "%lx in [%lx,%lx) [%lx,%lx)",
                         (unsigned long)v, (unsigned long)r[0], (unsigned long)r[1],
                         (unsigned long)r[2], (unsigned long)r[3]);
    }
}

#if defined(__x86_64__)
/* The bits of the words at w (at most 64 of them) by the vector forms, as a run is scanned. */
__attribute__((target("avx2"))) static uint64_t
avx2_bits(const struct launch_bounds *b, const uint64_t *w, unsigned count, int one)
{
    struct launch_vbounds vb;
    launch_vbounds_of(&vb, b);
    return launch_scan64_avx2(&vb, b, (const char *)w, count, one);
}

__attribute__((target("avx512f"))) static uint64_t
avx512_bits(const struct launch_bounds *b, const uint64_t *w, unsigned count, int one)
{
    struct launch_zbounds zb;
    launch_zbounds_of(&zb, b);
    return launch_scan64_avx512(&zb, (const char *)w, count, one);
}

typedef uint64_t (*scan_fn)(const struct launch_bounds *, const uint64_t *, unsigned, int);

/* Runs of 0 to `most` words that end where the page after them is inaccessible: a masked load
 * must not touch it. Words near the bounds' edges, and random ones. */
static void matches_scalar(scan_fn scan, unsigned most)
{
    long page = sysconf(_SC_PAGESIZE);
    char *m =
        mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert(m != MAP_FAILED);
    cr_assert_eq(mprotect(m + page, (size_t)page, PROT_NONE), 0);
    uint64_t *end = (uint64_t *)(void *)(m + page);
    for (int t = 0; t < 20000; t++) {
        uint64_t r[4];
        random_bounds(r);
        struct launch_bounds b;
        launch_bounds_of(&b, r[0], r[1], r[2], r[3]);
        unsigned count = (unsigned)(next() % (most + 1));
        uint64_t *w = end - count;
        for (unsigned i = 0; i < count; i++)
            w[i] = next() % 3 ? r[next() % 4] + next() % 5 - 2 : next();
        uint64_t want = 0;
        for (unsigned i = 0; i < count; i++)
            want |= (uint64_t)launch_may_hit(&b, w[i], 0) << i;
        cr_assert_eq(scan(&b, w, count, 0), want, "count %u", count);
        if (b.one) {
            cr_assert_eq(scan(&b, w, count, 1), want, "count %u, one range", count);
            for (unsigned i = 0; i < count; i++)
                cr_assert_eq(launch_may_hit(&b, w[i], 1), (int)(want >> i & 1));
        }
    }
    munmap(m, 2 * (size_t)page);
}

Test(launch_scan, avx2_matches_scalar)
{
    if (!__builtin_cpu_supports("avx2"))
        cr_skip_test("no AVX2");
    matches_scalar(avx2_bits, 64);
}

Test(launch_scan, avx512_matches_scalar)
{
    if (!__builtin_cpu_supports("avx512f"))
        cr_skip_test("no AVX-512");
    matches_scalar(avx512_bits, 64);
}
#endif
