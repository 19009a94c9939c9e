/* Single modules of the simulated driver: the range allocator and the size parser. */
#include <criterion/criterion.h>

#include "env.h"
#include "rangeset.h"

Test(rangeset, allocates_aligned_ranges_next_fit)
{
    struct rangeset rs;
    cr_assert(rangeset_init(&rs, 0x1000, 0x10000));
    uint64_t a, b, c;
    cr_assert(rangeset_alloc(&rs, 0x100, 0x1000, &a));
    cr_assert_eq(a, 0x1000);
    cr_assert(rangeset_alloc(&rs, 0x100, 0x1000, &b));
    cr_assert_eq(b, 0x2000, "aligned after the first");
    cr_assert(rangeset_release(&rs, a, 0x100));
    cr_assert(rangeset_alloc(&rs, 0x100, 0x1000, &c));
    cr_assert_eq(c, 0x3000, "a freed range is not reused while space remains ahead");
    rangeset_destroy(&rs);
}

Test(rangeset, wraps_around_and_coalesces)
{
    struct rangeset rs;
    cr_assert(rangeset_init(&rs, 0, 0x4000));
    uint64_t r[4];
    for (int i = 0; i < 4; i++)
        cr_assert(rangeset_alloc(&rs, 0x1000, 0x1000, &r[i]));
    uint64_t x;
    cr_assert_not(rangeset_alloc(&rs, 0x1000, 0x1000, &x), "full");
    cr_assert(rangeset_release(&rs, r[1], 0x1000));
    cr_assert(rangeset_release(&rs, r[2], 0x1000));
    cr_assert(rangeset_alloc(&rs, 0x2000, 0x1000, &x), "two neighbours merged");
    cr_assert_eq(x, r[1]);
    rangeset_destroy(&rs);
}

Test(rangeset, take_exact_and_detect_double_release)
{
    struct rangeset rs;
    cr_assert(rangeset_init(&rs, 0, 0x10000));
    cr_assert(rangeset_take(&rs, 0x4000, 0x2000));
    cr_assert_not(rangeset_take(&rs, 0x5000, 0x1000), "already taken");
    cr_assert_not(rangeset_take(&rs, 0xf000, 0x2000), "past the end");
    cr_assert(rangeset_release(&rs, 0x4000, 0x2000));
    cr_assert_not(rangeset_release(&rs, 0x4000, 0x1000), "released twice");
    uint64_t x;
    cr_assert(rangeset_alloc(&rs, 0x10000, 1, &x), "everything is free again");
    rangeset_destroy(&rs);
}

Test(env, parses_sizes_with_suffixes)
{
    uint64_t v;
    cr_assert(env_parse_bytes("123", &v));
    cr_assert_eq(v, 123);
    cr_assert(env_parse_bytes("4k", &v));
    cr_assert_eq(v, 4096);
    cr_assert(env_parse_bytes("64m", &v));
    cr_assert_eq(v, 64ull << 20);
    cr_assert(env_parse_bytes("16G", &v));
    cr_assert_eq(v, 16ull << 30);
    cr_assert(env_parse_bytes("2tb", &v));
    cr_assert_eq(v, 2ull << 40);
    cr_assert_not(env_parse_bytes("", &v));
    cr_assert_not(env_parse_bytes("g", &v));
    cr_assert_not(env_parse_bytes("12x", &v));
    cr_assert_not(env_parse_bytes("-1", &v));
    cr_assert_not(env_parse_bytes("99999999999t", &v), "overflow");
}

Test(env, reads_the_environment_with_defaults)
{
    setenv("SIMCU_TEST_SIZE", "3m", 1);
    cr_assert_eq(env_bytes("SIMCU_TEST_SIZE", 7), 3ull << 20);
    setenv("SIMCU_TEST_SIZE", "nonsense", 1);
    cr_assert_eq(env_bytes("SIMCU_TEST_SIZE", 7), 7);
    cr_assert_eq(env_bytes("SIMCU_TEST_UNSET", 7), 7);
    setenv("SIMCU_TEST_FLAG", "0", 1);
    cr_assert_not(env_flag("SIMCU_TEST_FLAG", true));
    setenv("SIMCU_TEST_FLAG", "1", 1);
    cr_assert(env_flag("SIMCU_TEST_FLAG", false));
    cr_assert(env_flag("SIMCU_TEST_UNSET", true));
}
