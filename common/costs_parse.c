/* costs_parse: see costs_parse.h. Integer arithmetic only, so "1.5g" is exact and the result
 * does not depend on the locale's decimal point. */
#include "costs_parse.h"

#include <string.h>

#define COSTS_MAX_FRACTION 12 /* digits after the point that can still matter (1e12 suffix) */

static int costs_digit(char c)
{
    return c >= '0' && c <= '9';
}

int costs_parse_rate(const char *s, unsigned long len, uint64_t *out)
{
    unsigned long i = 0;
    uint64_t whole = 0, frac = 0, frac_scale = 1, unit = 1;
    if (!s || len == 0 || !costs_digit(s[0]))
        return -1;
    for (; i < len && costs_digit(s[i]); i++) {
        uint64_t d = (uint64_t)(s[i] - '0');
        if (whole > (UINT64_MAX - d) / 10)
            return -1;
        whole = whole * 10 + d;
    }
    if (i < len && s[i] == '.') {
        unsigned long start = ++i;
        for (; i < len && costs_digit(s[i]); i++) {
            if (i - start < COSTS_MAX_FRACTION) {
                frac = frac * 10 + (uint64_t)(s[i] - '0');
                frac_scale *= 10;
            }
        }
        if (i == start)
            return -1; /* "1." */
    }
    if (i < len) {
        switch (s[i] | 0x20) {
        case 'k':
            unit = 1000ull;
            break;
        case 'm':
            unit = 1000000ull;
            break;
        case 'g':
            unit = 1000000000ull;
            break;
        case 't':
            unit = 1000000000000ull;
            break;
        default:
            return -1;
        }
        i++;
    }
    if (i != len)
        return -1;
    if (whole > UINT64_MAX / unit)
        return -1;
    uint64_t v = whole * unit;
    /* frac / frac_scale * unit, rounded down: frac < frac_scale <= 1e12 and unit <= 1e12, so
     * the product fits in 128 bits. */
    uint64_t f = (uint64_t)((unsigned __int128)frac * unit / frac_scale);
    if (v > UINT64_MAX - f)
        return -1;
    v += f;
    if (v == 0)
        return -1;
    *out = v;
    return 0;
}

int costs_parse(const char *s, struct costs_rates *out)
{
    static const char *const keys[] = {"h2d", "d2h", "gemm"};
    struct costs_rates r = {0, 0, 0};
    uint64_t *slot[] = {&r.h2d_bytes_per_s, &r.d2h_bytes_per_s, &r.gemm_flops_per_s};
    if (!s)
        return -1;
    const char *p = s;
    while (*p) {
        const char *end = strchr(p, ',');
        unsigned long n = end ? (unsigned long)(end - p) : (unsigned long)strlen(p);
        const char *eq = memchr(p, '=', n);
        if (!eq)
            return -1;
        unsigned long klen = (unsigned long)(eq - p);
        int k = -1;
        for (int j = 0; j < 3; j++)
            if (strlen(keys[j]) == klen && memcmp(p, keys[j], klen) == 0)
                k = j;
        if (k < 0 || *slot[k] != 0)
            return -1; /* unknown or repeated key */
        if (costs_parse_rate(eq + 1, n - klen - 1, slot[k]) != 0)
            return -1;
        if (!end)
            break;
        p = end + 1;
        if (!*p)
            return -1; /* trailing comma */
    }
    *out = r;
    return 0;
}

uint64_t costs_ns_at(uint64_t amount, uint64_t per_s)
{
    if (per_s == 0)
        return COSTS_UNKNOWN_NS;
    unsigned __int128 ns = ((unsigned __int128)amount * 1000000000u + per_s - 1) / per_s;
    return ns >= COSTS_UNKNOWN_NS ? COSTS_UNKNOWN_NS - 1 : (uint64_t)ns;
}

uint64_t costs_spill_ns(uint64_t bytes, uint64_t d2h_per_s, uint64_t h2d_per_s)
{
    uint64_t out = costs_ns_at(bytes, d2h_per_s), in = costs_ns_at(bytes, h2d_per_s);
    if (out == COSTS_UNKNOWN_NS || in == COSTS_UNKNOWN_NS)
        return COSTS_UNKNOWN_NS;
    return out > COSTS_UNKNOWN_NS - 1 - in ? COSTS_UNKNOWN_NS - 1 : out + in;
}
