/* crc32c: CRC-32C (Castagnoli), as MST_REC_CHECKSUM records hold it: the shim computes it over
 * each write-out, memshim-analyze checks it. Header-only so that both use the same code. The
 * SSE4.2 instruction where the CPU has it (about 10 GB/s), a table otherwise. */
#ifndef MEMSHIM_CRC32C_H
#define MEMSHIM_CRC32C_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint32_t mst_crc32c_table_entry(uint32_t i)
{
    uint32_t c = i;
    for (int k = 0; k < 8; k++)
        c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
    return c;
}

static inline uint32_t mst_crc32c_soft(uint32_t crc, const unsigned char *p, size_t n)
{
    static uint32_t table[256];
    static int ready;
    if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
        for (uint32_t i = 0; i < 256; i++)
            table[i] = mst_crc32c_table_entry(i);
        __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
    }
    for (size_t i = 0; i < n; i++)
        crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static inline uint32_t
mst_crc32c_hw(uint32_t crc, const unsigned char *p, size_t n)
{
    uint64_t c = crc;
    for (; n >= 8; n -= 8, p += 8) {
        uint64_t w;
        memcpy(&w, p, sizeof w);
        c = __builtin_ia32_crc32di(c, w);
    }
    uint32_t c32 = (uint32_t)c;
    for (; n > 0; n--, p++)
        c32 = __builtin_ia32_crc32qi(c32, *p);
    return c32;
}
#endif

/* CRC-32C of n bytes, continuing from `crc` (0 to start). */
static inline uint32_t mst_crc32c(uint32_t crc, const void *data, size_t n)
{
    const unsigned char *p = (const unsigned char *)data;
    crc = ~crc;
#if defined(__x86_64__)
    if (__builtin_cpu_supports("sse4.2"))
        return ~mst_crc32c_hw(crc, p, n);
#endif
    return ~mst_crc32c_soft(crc, p, n);
}

#endif /* MEMSHIM_CRC32C_H */
