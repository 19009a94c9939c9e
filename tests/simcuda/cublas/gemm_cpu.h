/* gemm_cpu: the CPU GEMM behind every simulated cuBLAS and cuBLASLt matmul.
 *
 * D = act(alpha * op(A) * op(B) + beta * C + bias), column-major, one batch element per call.
 * Deterministic: every output element is summed over k in increasing order in one accumulator
 * of the compute type, whatever the blocking, so equal inputs give bit-identical outputs.
 * Device pointers are host-addressable in simcuda, so operands are read in place. */
#ifndef SIMCUDA_GEMM_CPU_H
#define SIMCUDA_GEMM_CPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <library_types.h>

typedef enum gemm_act {
    GEMM_ACT_NONE,
    GEMM_ACT_RELU,
    GEMM_ACT_GELU, /* tanh approximation, as cuBLASLt's GELU epilogues */
} gemm_act;

typedef struct gemm_operand {
    const void *data;
    cudaDataType_t type;
    int64_t ld;
    bool trans; /* op(X) = X^T (for real types conjugate transpose is the same) */
} gemm_operand;

typedef struct gemm_problem {
    int64_t m, n, k;
    gemm_operand a, b;
    gemm_operand c; /* read only when beta != 0; trans ignored */
    void *d;        /* may alias c.data */
    cudaDataType_t d_type;
    int64_t ldd;
    double alpha, beta;
    bool compute_f64; /* else fp32 accumulation */
    const void *bias; /* NULL: none; else m elements of bias_type added to each column */
    cudaDataType_t bias_type;
    gemm_act act;
} gemm_problem;

/* Returns false (and writes nothing) for an element type the kernels cannot read. */
bool gemm_type_supported(cudaDataType_t type);

/* Computes one product. Returns 0, or -1 when scratch memory could not be allocated. */
int gemm_compute(const gemm_problem *p);

/* Size in bytes of one element of a supported type. */
size_t gemm_type_size(cudaDataType_t type);

#endif
