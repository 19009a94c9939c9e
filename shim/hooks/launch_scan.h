/* launch_scan: the words of a kernel's parameter that may be tracked addresses (candidates),
 * found by a range test on each word. Inline, in a header: the launch path (intercept_launch.c)
 * runs it once per parameter of every launch, and the unit tests hold its vector form to the
 * scalar one. */
#ifndef MEMSHIM_LAUNCH_SCAN_H
#define MEMSHIM_LAUNCH_SCAN_H

#include "compat.h"

#include <stdint.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

/* Where a word can be a tracked address at all: [lo, lo + span) or [map_lo, map_lo + map_span).
 * Most words a kernel is passed (sizes, strides, scalars, TensorIterator's offset calculators)
 * fail this test, which costs two compares where a registry lookup costs tens of instructions.
 * `one`: both ranges are the same one, so a single compare decides. */
struct launch_bounds {
    uint64_t lo, span, map_lo, map_span;
    int one;
};

/* Bounds from the allocations' [lo, hi) and the mappings' [map_lo, map_hi) (empty: lo == hi).
 * An empty range, or two that overlap or touch, leave one range whose test is the same as the
 * two's: a word in it is in one of them and the other way round. */
static inline void launch_bounds_of(struct launch_bounds *b, uint64_t lo, uint64_t hi,
                                    uint64_t map_lo, uint64_t map_hi)
{
    *b = (struct launch_bounds){lo, hi - lo, map_lo, map_hi - map_lo, 0};
    if (map_hi <= map_lo) {
        b->map_lo = lo, b->map_span = hi - lo;
    } else if (hi <= lo) {
        b->lo = map_lo, b->span = map_hi - map_lo;
    } else if ((lo > map_lo ? lo : map_lo) <= (hi < map_hi ? hi : map_hi)) {
        b->lo = b->map_lo = lo < map_lo ? lo : map_lo;
        b->span = b->map_span = (hi > map_hi ? hi : map_hi) - b->lo;
    } else {
        return;
    }
    b->one = 1;
}

/* `one`: a constant where inlined, b->one or 0, so that the second test is compiled out where it is
 * the same as the first. */
static inline int launch_may_hit(const struct launch_bounds *b, uint64_t v, int one)
{
    int in = v - b->lo < b->span;
    return one ? in : in | (v - b->map_lo < b->map_span);
}

#if defined(__x86_64__)
/* The bounds in vectors for AVX2, which has no unsigned 64-bit compare: v - lo < span as a signed
 * compare of both sides with the sign bit flipped. Flipping it is adding 2^63, so the flip and the
 * subtraction are one addition of 2^63 - lo, which takes the words straight from memory. */
struct launch_vbounds {
    __m256i add, span, map_add, map_span;
};

__attribute__((target("avx2"))) static inline void launch_vbounds_of(struct launch_vbounds *v,
                                                                     const struct launch_bounds *b)
{
    const uint64_t sign = (uint64_t)1 << 63;
    v->add = _mm256_set1_epi64x((long long)(sign - b->lo));
    v->span = _mm256_set1_epi64x((long long)(b->span ^ sign));
    v->map_add = _mm256_set1_epi64x((long long)(sign - b->map_lo));
    v->map_span = _mm256_set1_epi64x((long long)(b->map_span ^ sign));
}

/* launch_may_hit of four words, as all-ones lanes. */
__attribute__((target("avx2"))) static inline __m256i
launch_scan4_of(const struct launch_vbounds *b, __m256i v, int one)
{
    __m256i in = _mm256_cmpgt_epi64(b->span, _mm256_add_epi64(v, b->add));
    if (!one)
        in = _mm256_or_si256(in, _mm256_cmpgt_epi64(b->map_span, _mm256_add_epi64(v, b->map_add)));
    return in;
}

__attribute__((target("avx2"))) static inline __m256i
launch_scan4_at(const struct launch_vbounds *b, const char *p, int one)
{
    return launch_scan4_of(b, _mm256_loadu_si256((const __m256i *)(const void *)p), one);
}

__attribute__((target("avx2"))) static inline uint64_t launch_bits4(__m256i in)
{
    return (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(in));
}

/* The `left` (1 to 3) words at p, by a masked load: the words past them are not read (the
 * parameter may end at the end of a page), and their bits are never set. */
__attribute__((target("avx2"))) static inline uint64_t
launch_scan_tail_avx2(const struct launch_vbounds *b, const char *p, size_t left, int one)
{
    const __m256i live =
        _mm256_cmpgt_epi64(_mm256_set1_epi64x((long long)left), _mm256_set_epi64x(3, 2, 1, 0));
    __m256i v = _mm256_maskload_epi64((const long long *)(const void *)p, live);
    return launch_bits4(launch_scan4_of(b, v, one)) & ((1u << left) - 1);
}

/* The `count` (at most 64) words at p, as bits. Most words of a long run are no candidate: four
 * steps are tested together, and only a group holding one is taken apart. A run of one word (a
 * pointer parameter, the most common) is tested alone: a masked load costs more than the compare
 * (`b`: the same bounds as `vb`). */
__attribute__((target("avx2"))) static MS_HOT uint64_t
launch_scan64_avx2(const struct launch_vbounds *vb, const struct launch_bounds *b, const char *p,
                   unsigned count, int one)
{
    if (count == 1) {
        uint64_t v;
        memcpy(&v, p, sizeof v);
        return (uint64_t)launch_may_hit(b, v, one);
    }
    uint64_t bits = 0;
    size_t k = 0;
    for (; k + 16 <= count; k += 16) {
        const char *q = p + 8 * k;
        __m256i m0 = launch_scan4_at(vb, q, one), m1 = launch_scan4_at(vb, q + 32, one);
        __m256i m2 = launch_scan4_at(vb, q + 64, one), m3 = launch_scan4_at(vb, q + 96, one);
        __m256i any = _mm256_or_si256(_mm256_or_si256(m0, m1), _mm256_or_si256(m2, m3));
        if (!_mm256_testz_si256(any, any))
            bits |= (launch_bits4(m0) | launch_bits4(m1) << 4 | launch_bits4(m2) << 8 |
                     launch_bits4(m3) << 12)
                    << k;
    }
    for (; k + 4 <= count; k += 4)
        bits |= launch_bits4(launch_scan4_at(vb, p + 8 * k, one)) << k;
    if (k < count)
        bits |= launch_scan_tail_avx2(vb, p + 8 * k, count - k, one) << k;
    return bits;
}

/* AVX-512 compares unsigned 64-bit words into a mask, and its masked load reads (and faults on)
 * only the words the mask names: no sign flip, and a run's tail is one more step of eight.
 * lo is kept negated: v + -lo is v - lo, and an addition takes the words straight from memory. */
struct launch_zbounds {
    __m512i neg_lo, span, neg_map_lo, map_span;
};

__attribute__((target("avx512f"))) static inline void
launch_zbounds_of(struct launch_zbounds *z, const struct launch_bounds *b)
{
    z->neg_lo = _mm512_set1_epi64((long long)(0 - b->lo));
    z->span = _mm512_set1_epi64((long long)b->span);
    z->neg_map_lo = _mm512_set1_epi64((long long)(0 - b->map_lo));
    z->map_span = _mm512_set1_epi64((long long)b->map_span);
}

/* launch_may_hit of the eight words v whose bits `live` holds, as bits. */
__attribute__((target("avx512f"))) static inline __mmask8
launch_scan8_of(const struct launch_zbounds *b, __m512i v, __mmask8 live, int one)
{
    __mmask8 in = _mm512_mask_cmplt_epu64_mask(live, _mm512_add_epi64(v, b->neg_lo), b->span);
    if (!one)
        in |= _mm512_mask_cmplt_epu64_mask(live, _mm512_add_epi64(v, b->neg_map_lo), b->map_span);
    return in;
}

/* The eight words at p. */
__attribute__((target("avx512f"))) static inline __mmask16
launch_scan8_avx512(const struct launch_zbounds *b, const char *p, int one)
{
    return launch_scan8_of(b, _mm512_loadu_si512(p), 0xff, one);
}

/* The `count` (at most 64) words at p, as bits. Most words of a long run are no candidate:
 * four steps' masks are tested together, and only a group holding one is taken apart. */
__attribute__((target("avx512f"))) static MS_HOT uint64_t
launch_scan64_avx512(const struct launch_zbounds *b, const char *p, unsigned count, int one)
{
    uint64_t bits = 0;
    size_t k = 0;
    for (; k + 32 <= count; k += 32) {
        const char *q = p + 8 * k;
        __mmask16 lo =
            _mm512_kunpackb(launch_scan8_avx512(b, q + 64, one), launch_scan8_avx512(b, q, one));
        __mmask16 hi = _mm512_kunpackb(launch_scan8_avx512(b, q + 192, one),
                                       launch_scan8_avx512(b, q + 128, one));
        if (!_mm512_kortestz(lo, hi))
            bits |= ((uint64_t)hi << 16 | lo) << k;
    }
    for (; k < count; k += 8) {
        size_t left = count - k;
        __mmask8 live = (__mmask8)(left >= 8 ? 0xffu : (1u << left) - 1);
        __m512i v = _mm512_maskz_loadu_epi64(live, p + 8 * k);
        bits |= (uint64_t)launch_scan8_of(b, v, live, one) << k;
    }
    return bits;
}
#endif

#endif /* MEMSHIM_LAUNCH_SCAN_H */
