/* gemm_range: byte extents and scalars of BLAS operands, shared by the cuBLAS and cuBLASLt
 * hooks. Pure arithmetic on the call's arguments; never touches device memory. */
#ifndef MEMSHIM_GEMM_RANGE_H
#define MEMSHIM_GEMM_RANGE_H

#include <stdint.h>

#include "access.h"

/* Bits per element of a cudaDataType (complex: both parts); 0 for a type we do not know. */
unsigned gemm_range_dtype_bits(int dtype);

/* Bytes spanned by a column-major rows x cols matrix with leading dimension ld (elements):
 * ld * (cols - 1) + rows elements, rounded up to whole bytes; 0 when the matrix is empty or
 * the type unknown. Row-major storage is the same with rows and cols swapped. */
uint64_t gemm_range_matrix_bytes(int dtype, uint64_t rows, uint64_t cols, uint64_t ld);

/* gemm_range_batched for more than one matrix at a nonzero stride. */
int gemm_range_batched_span(struct access_range *out, uint64_t addr, uint64_t one,
                            int64_t stride_bytes, uint64_t batch, uint8_t mode);

/* The span of `batch` matrices of `one` bytes each, the i-th at addr + i * stride_bytes (a
 * stride may be 0, broadcasting one matrix, or negative). Writes *out and returns 1; 0 (and
 * nothing written) when there is nothing to touch (null address, empty matrix, no batch).
 * Inline: every operand of every GEMM comes here, and most are one matrix. */
static inline int gemm_range_batched(struct access_range *out, uint64_t addr, uint64_t one,
                                     int64_t stride_bytes, uint64_t batch, uint8_t mode)
{
    if (!addr || !one || !batch)
        return 0;
    if (batch > 1 && stride_bytes != 0)
        return gemm_range_batched_span(out, addr, one, stride_bytes, batch, mode);
    /* one matrix, or one broadcast to every member */
    *out = (struct access_range){.addr = addr, .size = one, .mode = mode};
    return 1;
}

/* Whether the host scalar at p, of cudaDataType scalar_type, is zero (either sign). An
 * unknown type is reported as non-zero: the caller then records the read it might do. */
int gemm_range_scalar_is_zero(const void *p, int scalar_type);

/* The scalar type cuBLAS expects for alpha and beta under a cublasComputeType_t, given C's
 * type (complex C takes complex scalars); -1 when unknown. */
int gemm_range_scale_type(int compute_type, int c_type);

/* A cudaDataType as OP records hold it: 0xff when out of range. */
uint8_t gemm_range_dtype_byte(int dtype);

/* Stored (column-major) shape of op(X) of rows x cols: a transposed operand (trans other than
 * CUBLAS_OP_N) swaps them. */
void gemm_range_stored(int trans, int64_t rows, int64_t cols, uint64_t *r, uint64_t *c);
/* A stride in elements of dtype, in bytes. */
int64_t gemm_range_stride_bytes(int dtype, int64_t stride);
/* The same for a stride that only matters with more than one matrix: 0 when batch <= 1, which
 * spares one matrix (most GEMMs) the arithmetic in 128 bits. */
static inline int64_t gemm_range_batch_stride(int dtype, int64_t stride, int64_t batch)
{
    return batch > 1 ? gemm_range_stride_bytes(dtype, stride) : 0;
}
/* Bytes from an operand's first to its last element over `batch` matrices of `one` bytes,
 * `stride` elements apart; 0 when the stride is negative. */
uint64_t gemm_range_extent(int dtype, uint64_t one, int64_t stride, int64_t batch);

/* 2 * m * n * k * batch, saturating at UINT64_MAX. */
uint64_t gemm_range_flops(uint64_t m, uint64_t n, uint64_t k, uint64_t batch);

#endif /* MEMSHIM_GEMM_RANGE_H */
