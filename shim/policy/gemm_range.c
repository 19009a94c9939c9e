/* gemm_range: operand extents and scalars; see gemm_range.h. */
#include "gemm_range.h"

#include <library_types.h>
#include <string.h>

#include <cublas_api.h>

#include "compat.h"

unsigned gemm_range_dtype_bits(int dtype)
{
    switch (dtype) {
    case CUDA_R_4I:
    case CUDA_R_4U:
    case CUDA_R_4F_E2M1:
        return 4;
    case CUDA_R_6F_E2M3:
    case CUDA_R_6F_E3M2:
        return 6;
    case CUDA_R_8I:
    case CUDA_R_8U:
    case CUDA_C_4I:
    case CUDA_C_4U:
    case CUDA_R_8F_E4M3:
    case CUDA_R_8F_E5M2:
    case CUDA_R_8F_UE8M0:
        return 8;
    case CUDA_R_16F:
    case CUDA_R_16BF:
    case CUDA_R_16I:
    case CUDA_R_16U:
    case CUDA_C_8I:
    case CUDA_C_8U:
        return 16;
    case CUDA_R_32F:
    case CUDA_R_32I:
    case CUDA_R_32U:
    case CUDA_C_16F:
    case CUDA_C_16BF:
    case CUDA_C_16I:
    case CUDA_C_16U:
        return 32;
    case CUDA_R_64F:
    case CUDA_R_64I:
    case CUDA_R_64U:
    case CUDA_C_32F:
    case CUDA_C_32I:
    case CUDA_C_32U:
        return 64;
    case CUDA_C_64F:
    case CUDA_C_64I:
    case CUDA_C_64U:
        return 128;
    default:
        return 0;
    }
}

uint64_t gemm_range_matrix_bytes(int dtype, uint64_t rows, uint64_t cols, uint64_t ld)
{
    unsigned bits = gemm_range_dtype_bits(dtype);
    if (!bits || !rows || !cols)
        return 0;
    if (ld < rows)
        ld = rows; /* an invalid ld fails the real call; span at least the columns' rows */
    uint64_t elems, bytes;
    /* The usual shapes stay in 64 bits (this runs on every GEMM); huge ones saturate. */
    if (__builtin_mul_overflow(ld, cols - 1, &elems) || __builtin_add_overflow(elems, rows, &elems))
        return UINT64_MAX;
    if (bits % 8 == 0)
        return __builtin_mul_overflow(elems, bits / 8, &bytes) ? UINT64_MAX : bytes;
    if (__builtin_mul_overflow(elems, bits, &bytes) || bytes > UINT64_MAX - 7)
        return UINT64_MAX;
    return (bytes + 7) / 8;
}

/* Out of line (also under LTO): its 128-bit arithmetic would make every inlined caller save
 * registers for the common case too. */
MS_NOINLINE int gemm_range_batched_span(struct access_range *out, uint64_t addr, uint64_t one,
                                        int64_t stride_bytes, uint64_t batch, uint8_t mode)
{
    __int128 span = (__int128)stride_bytes * (__int128)(batch - 1);
    __int128 lo = span < 0 ? span : 0, hi = (span > 0 ? span : 0) + (__int128)one;
    __int128 first = (__int128)addr + lo;
    if (first < 0)
        first = 0;
    __int128 size = hi - lo;
    out->addr = (uint64_t)first;
    out->size = size > (__int128)UINT64_MAX ? UINT64_MAX : (uint64_t)size;
    out->mode = mode;
    return 1;
}

static int gemm_range_half_zero(const void *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return (h & 0x7fffu) == 0;
}

int gemm_range_scalar_is_zero(const void *p, int scalar_type)
{
    if (!p)
        return 0;
    switch (scalar_type) {
    case CUDA_R_16F:
    case CUDA_R_16BF:
        return gemm_range_half_zero(p);
    case CUDA_C_16F:
    case CUDA_C_16BF:
        return gemm_range_half_zero(p) && gemm_range_half_zero((const char *)p + 2);
    case CUDA_R_32F:
    case CUDA_C_32F: {
        float v[2] = {0, 0};
        memcpy(v, p, scalar_type == CUDA_R_32F ? sizeof v[0] : sizeof v);
        return v[0] == 0.0f && v[1] == 0.0f;
    }
    case CUDA_R_64F:
    case CUDA_C_64F: {
        double v[2] = {0, 0};
        memcpy(v, p, scalar_type == CUDA_R_64F ? sizeof v[0] : sizeof v);
        return v[0] == 0.0 && v[1] == 0.0;
    }
    case CUDA_R_32I: {
        int32_t v;
        memcpy(&v, p, sizeof v);
        return v == 0;
    }
    default:
        return 0;
    }
}

static int gemm_range_is_complex(int dtype)
{
    switch (dtype) {
    case CUDA_C_16F:
    case CUDA_C_16BF:
    case CUDA_C_32F:
    case CUDA_C_64F:
    case CUDA_C_8I:
    case CUDA_C_8U:
    case CUDA_C_32I:
        return 1;
    default:
        return 0;
    }
}

int gemm_range_scale_type(int compute_type, int c_type)
{
    int complex = gemm_range_is_complex(c_type);
    switch (compute_type) {
    case CUBLAS_COMPUTE_16F:
    case CUBLAS_COMPUTE_16F_PEDANTIC:
        return complex ? CUDA_C_16F : CUDA_R_16F;
    case CUBLAS_COMPUTE_32F:
    case CUBLAS_COMPUTE_32F_PEDANTIC:
    case CUBLAS_COMPUTE_32F_FAST_16F:
    case CUBLAS_COMPUTE_32F_FAST_16BF:
    case CUBLAS_COMPUTE_32F_FAST_TF32:
    case CUBLAS_COMPUTE_32F_EMULATED_16BFX9:
        return complex ? CUDA_C_32F : CUDA_R_32F;
    case CUBLAS_COMPUTE_64F:
    case CUBLAS_COMPUTE_64F_PEDANTIC:
    case CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT:
        return complex ? CUDA_C_64F : CUDA_R_64F;
    case CUBLAS_COMPUTE_32I:
    case CUBLAS_COMPUTE_32I_PEDANTIC:
        return CUDA_R_32I;
    default:
        return -1;
    }
}

uint8_t gemm_range_dtype_byte(int dtype)
{
    return dtype >= 0 && dtype < 0xff ? (uint8_t)dtype : 0xff;
}

uint64_t gemm_range_flops(uint64_t m, uint64_t n, uint64_t k, uint64_t batch)
{
    unsigned __int128 f = (unsigned __int128)2 * m * n;
    if (f > UINT64_MAX)
        return UINT64_MAX;
    f *= k;
    if (f > UINT64_MAX)
        return UINT64_MAX;
    f *= batch;
    return f > UINT64_MAX ? UINT64_MAX : (uint64_t)f;
}

void gemm_range_stored(int trans, int64_t rows, int64_t cols, uint64_t *r, uint64_t *c)
{
    int t = trans != CUBLAS_OP_N;
    *r = (uint64_t)(t ? cols : rows);
    *c = (uint64_t)(t ? rows : cols);
}

int64_t gemm_range_stride_bytes(int dtype, int64_t stride)
{
    return (int64_t)(((__int128)stride * gemm_range_dtype_bits(dtype)) / 8);
}

uint64_t gemm_range_extent(int dtype, uint64_t one, int64_t stride, int64_t batch)
{
    if (batch <= 1)
        return one;
    int64_t sb = gemm_range_stride_bytes(dtype, stride);
    if (sb < 0)
        return 0;
    return (uint64_t)sb * (uint64_t)(batch - 1) + one;
}
