#include "fp16.h"

#include <string.h>

static uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

float fp16_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1f)
        return bits_float(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        /* Subnormal (or zero): value is man * 2^-24, exact in float. */
        float v = (float)man * 0x1p-24f;
        return sign ? -v : v;
    }
    return bits_float(sign | ((exp + 112u) << 23) | (man << 13));
}

uint16_t fp16_float_to_half(float f)
{
    uint32_t u = float_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t abs = u & 0x7fffffffu;
    if (abs >= 0x7f800000u) /* inf or nan; keep nan quiet */
        return sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0);
    if (abs >= 0x477ff000u) /* rounds to >= 65520: overflow to inf */
        return sign | 0x7c00u;
    if (abs < 0x38800000u) {
        /* Result is subnormal in half: scale so the integer part is the mantissa; the float
         * addition of 0.5-ulp magic rounds to nearest even for us. */
        float v = bits_float(abs) + 0.5f;
        return sign | (uint16_t)(float_bits(v) - float_bits(0.5f));
    }
    uint32_t odd = (abs >> 13) & 1u;
    abs += 0xc8000fffu + odd; /* rebias exponent (-112 << 23) and round to nearest even */
    return sign | (uint16_t)(abs >> 13);
}

float fp16_bf16_to_float(uint16_t b)
{
    return bits_float((uint32_t)b << 16);
}

uint16_t fp16_float_to_bf16(float f)
{
    uint32_t u = float_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
