/* crc32c: CRC-32C (Castagnoli), as MST_REC_CHECKSUM records hold it: the shim computes it over
 * each write-out, memshim-analyze checks it. Header-only so that both use the same code. The
 * CPU's CRC instruction where it has one (SSE4.2, ARMv8 CRC), checked at run time, a table
 * otherwise.
 *
 * The instruction takes a few cycles to finish but a new one can start every cycle, so long
 * inputs run as three independent streams over adjacent blocks whose CRCs are then joined:
 * the CRC register is linear in its initial value, so the CRC of A then B is the register of A
 * carried past |B| zero bytes, xor the CRC of B started from zero. Carrying a register past one
 * block's length is a fixed linear map, tabulated once (mst_crc32c_shift).
 *
 * That still takes one instruction per 8 bytes. An x86-64 CPU with AVX-512 and VPCLMULQDQ
 * reduces 64 bytes with two carry-less multiplies instead (mst_crc32c_fold): two to three times
 * as fast on bytes in the cache, which is where the analyzer sums a write-out from. */
#ifndef MEMSHIM_CRC32C_H
#define MEMSHIM_CRC32C_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7)
#endif
#endif

#define MST_CRC32C_POLY  0x82f63b78u /* reflected */
#define MST_CRC32C_BLOCK 4096u       /* bytes of each of the three streams per round */

static inline uint32_t mst_crc32c_table_entry(uint32_t i)
{
    uint32_t c = i;
    for (int k = 0; k < 8; k++)
        c = c & 1 ? (c >> 1) ^ MST_CRC32C_POLY : c >> 1;
    return c;
}

/* The byte-at-a-time table, built on first use; the racing first callers all write the same
 * values. */
static inline const uint32_t *mst_crc32c_byte_table(void)
{
    static uint32_t table[256];
    static int ready;
    if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
        for (uint32_t i = 0; i < 256; i++)
            table[i] = mst_crc32c_table_entry(i);
        __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
    }
    return table;
}

static inline uint32_t mst_crc32c_soft(uint32_t crc, const unsigned char *p, size_t n)
{
    const uint32_t *table = mst_crc32c_byte_table();
    for (size_t i = 0; i < n; i++)
        crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    return crc;
}

/* The register `crc` carried past MST_CRC32C_BLOCK zero bytes: a 32x32 bit matrix over GF(2),
 * applied a byte of the register at a time, built on first use from the images of the 32 bits
 * (as mst_crc32c_byte_table). */
static inline uint32_t mst_crc32c_shift(uint32_t crc)
{
    static uint32_t table[4][256];
    static int ready;
    if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
        const uint32_t *bytes = mst_crc32c_byte_table();
        uint32_t basis[32];
        for (int b = 0; b < 32; b++) {
            uint32_t c = 1u << b;
            for (uint32_t k = 0; k < MST_CRC32C_BLOCK; k++)
                c = bytes[c & 0xff] ^ (c >> 8);
            basis[b] = c;
        }
        for (int k = 0; k < 4; k++)
            for (uint32_t v = 0; v < 256; v++) {
                uint32_t c = 0;
                for (int b = 0; b < 8; b++)
                    if (v & (1u << b))
                        c ^= basis[8 * k + b];
                table[k][v] = c;
            }
        __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
    }
    return table[0][crc & 0xff] ^ table[1][(crc >> 8) & 0xff] ^ table[2][(crc >> 16) & 0xff] ^
           table[3][crc >> 24];
}

/* MST_CRC32C_HW(name, attribute, u64 step, u8 step): the three-stream loop over one CPU's
 * instruction, as a function `name`. */
#define MST_CRC32C_HW(name, attr, step64, step8)                                                   \
    attr static inline uint32_t name(uint32_t crc, const unsigned char *p, size_t n)               \
    {                                                                                              \
        const size_t B = MST_CRC32C_BLOCK;                                                         \
        for (; n >= 3 * B; n -= 3 * B, p += 3 * B) {                                               \
            uint64_t c0 = crc, c1 = 0, c2 = 0;                                                     \
            /* The next round's lines are fetched during this one: a page boundary stops the       \
             * hardware prefetcher, and data read once (a mapped trace) comes from memory. */      \
            const unsigned char *next = n >= 6 * B ? p + 3 * B : p;                                \
            for (size_t line = 0; line < B; line += 64) {                                          \
                __builtin_prefetch(next + line);                                                   \
                __builtin_prefetch(next + B + line);                                               \
                __builtin_prefetch(next + 2 * B + line);                                           \
                /* unrolled: the steps alone, no count and branch between them */                  \
                _Pragma("GCC unroll 8") for (size_t i = line; i < line + 64; i += 8)               \
                {                                                                                  \
                    uint64_t w0, w1, w2;                                                           \
                    memcpy(&w0, p + i, 8);                                                         \
                    memcpy(&w1, p + B + i, 8);                                                     \
                    memcpy(&w2, p + 2 * B + i, 8);                                                 \
                    c0 = step64(c0, w0);                                                           \
                    c1 = step64(c1, w1);                                                           \
                    c2 = step64(c2, w2);                                                           \
                }                                                                                  \
            }                                                                                      \
            crc = mst_crc32c_shift(mst_crc32c_shift((uint32_t)c0) ^ (uint32_t)c1) ^ (uint32_t)c2;  \
        }                                                                                          \
        uint64_t c = crc;                                                                          \
        _Pragma("GCC unroll 4") for (; n >= 8; n -= 8, p += 8)                                     \
        {                                                                                          \
            uint64_t w;                                                                            \
            memcpy(&w, p, sizeof w);                                                               \
            c = step64(c, w);                                                                      \
        }                                                                                          \
        uint32_t c32 = (uint32_t)c;                                                                \
        for (; n > 0; n--, p++)                                                                    \
            c32 = step8(c32, *p);                                                                  \
        return c32;                                                                                \
    }

#if defined(__x86_64__)
#define MST_CRC32C_X86_64(c, w) __builtin_ia32_crc32di((c), (w))
#define MST_CRC32C_X86_8(c, b)  __builtin_ia32_crc32qi((c), (b))
MST_CRC32C_HW(mst_crc32c_hw, __attribute__((target("sse4.2"))), MST_CRC32C_X86_64, MST_CRC32C_X86_8)
#define MST_CRC32C_HAVE_HW() __builtin_cpu_supports("sse4.2")

/* Folding. The bytes are a polynomial over GF(2), the first bit the highest power, and the CRC
 * depends only on it modulo P. Sixteen bytes D bits before others, L (their first 8) * x^64 +
 * H, move onto them as L * (x^(64+D) mod P) + H * (x^D mod P): two 64x32-bit carry-less
 * products, which fit in the 128 bits they are xored into. In the reflected lanes a product
 * comes out one power short, so the constants are x^(63+D) and x^(D-1) mod P, bit-reversed in
 * the high half of their 64-bit lane. Four 64-byte accumulators fold 256 bytes on (hiding the
 * multiply's latency), then into each other, then into one 16-byte lane, whose CRC from zero is
 * that of everything before it: the initial register was xored into the first 4 bytes. */
#define MST_CRC32C_FOLD_ATTR __attribute__((target("avx512f,vpclmulqdq,pclmul,sse4.2")))
#define MST_CRC32C_FOLD_MIN  256u /* the four accumulators' first load */
/* a page on, as the three-stream loop fetches its next round: a page boundary stops the
 * hardware prefetcher, and bytes read once (a mapped trace) come from memory */
#define MST_CRC32C_FOLD_FETCH 4096
/* the constants for distance D: for the first 8 bytes x^(63+D), for the last 8 x^(D-1) */
#define MST_CRC32C_K(first8, last8)                                                                \
    _mm_set_epi64x((long long)((uint64_t)(last8) << 32), (long long)((uint64_t)(first8) << 32))
#define MST_CRC32C_K128  MST_CRC32C_K(0x3743f7bdu, 0x3171d430u)
#define MST_CRC32C_K256  MST_CRC32C_K(0x33ccbbbcu, 0xa2158b34u)
#define MST_CRC32C_K384  MST_CRC32C_K(0xa46ef4aau, 0x6051243fu)
#define MST_CRC32C_K512  MST_CRC32C_K(0x1c19243bu, 0x75bba45bu)
#define MST_CRC32C_K2048 MST_CRC32C_K(0xe9a5d8beu, 0x1426a815u)

MST_CRC32C_FOLD_ATTR static inline __m128i mst_crc32c_fold16(__m128i x, __m128i k, __m128i onto)
{
    __m128i lo = _mm_clmulepi64_si128(x, k, 0x00), hi = _mm_clmulepi64_si128(x, k, 0x11);
    return _mm_xor_si128(_mm_xor_si128(lo, hi), onto);
}

MST_CRC32C_FOLD_ATTR static inline __m512i mst_crc32c_fold64(__m512i x, __m512i k, __m512i onto)
{
    __m512i lo = _mm512_clmulepi64_epi128(x, k, 0x00), hi = _mm512_clmulepi64_epi128(x, k, 0x11);
    return _mm512_ternarylogic_epi64(lo, hi, onto, 0x96); /* lo ^ hi ^ onto */
}

/* At least MST_CRC32C_FOLD_MIN bytes. */
MST_CRC32C_FOLD_ATTR static inline uint32_t mst_crc32c_fold(uint32_t crc, const unsigned char *p,
                                                            size_t n)
{
    __m512i x[4];
    for (int i = 0; i < 4; i++)
        x[i] = _mm512_loadu_si512((const void *)(p + 64 * i));
    x[0] = _mm512_xor_si512(x[0], _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)crc)));
    const __m512i k2048 = _mm512_broadcast_i32x4(MST_CRC32C_K2048);
    for (p += 256, n -= 256; n >= 256; p += 256, n -= 256) {
        for (int i = 0; i < 4; i++)
            __builtin_prefetch(p + MST_CRC32C_FOLD_FETCH + 64 * i);
        for (int i = 0; i < 4; i++)
            x[i] = mst_crc32c_fold64(x[i], k2048, _mm512_loadu_si512((const void *)(p + 64 * i)));
    }
    const __m512i k512 = _mm512_broadcast_i32x4(MST_CRC32C_K512);
    for (int i = 1; i < 4; i++)
        x[i] = mst_crc32c_fold64(x[i - 1], k512, x[i]);
    __m128i a = _mm512_extracti32x4_epi32(x[3], 3);
    a = mst_crc32c_fold16(_mm512_extracti32x4_epi32(x[3], 0), MST_CRC32C_K384, a);
    a = mst_crc32c_fold16(_mm512_extracti32x4_epi32(x[3], 1), MST_CRC32C_K256, a);
    a = mst_crc32c_fold16(_mm512_extracti32x4_epi32(x[3], 2), MST_CRC32C_K128, a);
    for (; n >= 16; p += 16, n -= 16)
        a = mst_crc32c_fold16(a, MST_CRC32C_K128,
                              _mm_loadu_si128((const __m128i *)(const void *)p));
    uint64_t c = _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(a));
    c = _mm_crc32_u64(c, (uint64_t)_mm_extract_epi64(a, 1));
    return mst_crc32c_hw((uint32_t)c, p, n);
}
#define MST_CRC32C_HAVE_FOLD()                                                                     \
    (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("vpclmulqdq"))
#elif defined(__aarch64__) && defined(__linux__)
/* The instructions by name: the C intrinsics need the feature enabled for the whole file, and
 * GCC and clang spell it differently in a target attribute. */
static inline uint32_t mst_crc32c_arm_64(uint64_t c, uint64_t w)
{
    uint32_t c32 = (uint32_t)c;
    __asm__(".arch_extension crc\n\tcrc32cx %w0, %w0, %x1" : "+r"(c32) : "r"(w));
    return c32;
}
static inline uint32_t mst_crc32c_arm_8(uint32_t c, uint8_t b)
{
    __asm__(".arch_extension crc\n\tcrc32cb %w0, %w0, %w1" : "+r"(c) : "r"((uint32_t)b));
    return c;
}
MST_CRC32C_HW(mst_crc32c_hw, , mst_crc32c_arm_64, mst_crc32c_arm_8)
#define MST_CRC32C_HAVE_HW() ((getauxval(AT_HWCAP) & HWCAP_CRC32) != 0)
#endif

/* CRC-32C of n bytes, continuing from `crc` (0 to start). */
static inline uint32_t mst_crc32c(uint32_t crc, const void *data, size_t n)
{
    const unsigned char *p = (const unsigned char *)data;
    crc = ~crc;
#ifdef MST_CRC32C_HAVE_FOLD
    if (n >= MST_CRC32C_FOLD_MIN && MST_CRC32C_HAVE_FOLD())
        return ~mst_crc32c_fold(crc, p, n);
#endif
#ifdef MST_CRC32C_HAVE_HW
    if (MST_CRC32C_HAVE_HW())
        return ~mst_crc32c_hw(crc, p, n);
#endif
    return ~mst_crc32c_soft(crc, p, n);
}

#endif /* MEMSHIM_CRC32C_H */
