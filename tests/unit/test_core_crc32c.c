/* crc32c: every path (the table, the CRC instruction's three streams, the carry-less fold) gives
 * the same CRC, at any length, alignment and starting value, and the fold's constants are the
 * powers of x its comment says. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#include "memshim/crc32c.h"

/* x^e mod P, P = x^32 + 0x1edc6f41 (CRC-32C's polynomial, not reflected), bit-reversed. */
static uint32_t power_reflected(unsigned e)
{
    uint64_t v = 1;
    for (unsigned i = 0; i < e; i++) {
        v <<= 1;
        if (v >> 32)
            v ^= 0x11edc6f41ull;
    }
    uint32_t r = 0;
    for (int b = 0; b < 32; b++)
        r |= (uint32_t)((v >> b) & 1) << (31 - b);
    return r;
}

static unsigned char *random_bytes(size_t n)
{
    unsigned char *p = malloc(n);
    cr_assert_not_null(p);
    srand(7);
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)rand();
    return p;
}

Test(crc32c, check_value)
{
    cr_assert_eq(mst_crc32c(0, "123456789", 9), 0xe3069283u);
}

/* Split anywhere, a CRC carried on from the first part is the CRC of the whole. */
Test(crc32c, carried_on_equals_whole)
{
    enum { N = 100000 };
    unsigned char *p = random_bytes(N);
    uint32_t whole = ~mst_crc32c_soft(~0u, p, N);
    cr_assert_eq(mst_crc32c(0, p, N), whole);
    for (size_t cut = 0; cut < N; cut += 997)
        cr_assert_eq(mst_crc32c(mst_crc32c(0, p, cut), p + cut, N - cut), whole, "cut %zu", cut);
    free(p);
}

#if defined(__x86_64__)
Test(crc32c, fold_constants_are_powers_of_x)
{
    static const unsigned distances[] = {128, 256, 384, 512, 2048};
    const __m128i k[] = {MST_CRC32C_K128, MST_CRC32C_K256, MST_CRC32C_K384, MST_CRC32C_K512,
                         MST_CRC32C_K2048};
    for (int i = 0; i < 5; i++) {
        uint64_t lanes[2];
        memcpy(lanes, &k[i], sizeof lanes);
        cr_assert_eq(lanes[0], (uint64_t)power_reflected(63 + distances[i]) << 32);
        cr_assert_eq(lanes[1], (uint64_t)power_reflected(distances[i] - 1) << 32);
    }
}

Test(crc32c, fold_equals_table)
{
    if (!MST_CRC32C_HAVE_FOLD())
        cr_skip_test("no AVX-512 VPCLMULQDQ on this CPU");
    enum { N = 70000 };
    unsigned char *p = random_bytes(N + 64);
    for (size_t n = MST_CRC32C_FOLD_MIN; n < 3000; n++)
        for (size_t at = 0; at < 3; at++) {
            uint32_t start = (uint32_t)(n * 2654435761u);
            cr_assert_eq(mst_crc32c_fold(start, p + at, n), mst_crc32c_soft(start, p + at, n),
                         "%zu bytes at %zu", n, at);
        }
    for (size_t n = N - 300; n <= N; n++)
        cr_assert_eq(mst_crc32c_fold(0, p + 5, n), mst_crc32c_soft(0, p + 5, n), "%zu bytes", n);
    free(p);
}
#endif

Test(crc32c, instruction_equals_table)
{
#ifdef MST_CRC32C_HAVE_HW
    if (!MST_CRC32C_HAVE_HW())
        cr_skip_test("no CRC instruction on this CPU");
    enum { N = 3 * 3 * MST_CRC32C_BLOCK + 100 };
    unsigned char *p = random_bytes(N + 1);
    for (size_t n = 0; n <= N; n += n < 300 ? 1 : 101) /* unaligned: one byte in */
        cr_assert_eq(mst_crc32c_hw(~0u, p + 1, n), mst_crc32c_soft(~0u, p + 1, n), "%zu bytes", n);
    free(p);
#else
    cr_skip_test("no CRC instruction on this architecture");
#endif
}
