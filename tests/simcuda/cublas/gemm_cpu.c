#include "gemm_cpu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fp16.h"

/* Rows of C per block: one block of packed A columns stays in L2 across the column loop. */
#define GEMM_MB 128
/* Columns of C computed together, so each loaded element of A feeds four products. */
#define GEMM_NB 4

bool gemm_type_supported(cudaDataType_t type)
{
    return type == CUDA_R_32F || type == CUDA_R_64F || type == CUDA_R_16F || type == CUDA_R_16BF;
}

size_t gemm_type_size(cudaDataType_t type)
{
    switch (type) {
    case CUDA_R_64F:
        return 8;
    case CUDA_R_32F:
        return 4;
    case CUDA_R_16F:
    case CUDA_R_16BF:
        return 2;
    default:
        return 0;
    }
}

static double load_elem(const void *base, cudaDataType_t type, int64_t idx)
{
    switch (type) {
    case CUDA_R_32F:
        return ((const float *)base)[idx];
    case CUDA_R_64F:
        return ((const double *)base)[idx];
    case CUDA_R_16F:
        return fp16_half_to_float(((const uint16_t *)base)[idx]);
    case CUDA_R_16BF:
        return fp16_bf16_to_float(((const uint16_t *)base)[idx]);
    default:
        return 0.0;
    }
}

static void store_elem(void *base, cudaDataType_t type, int64_t idx, double v)
{
    switch (type) {
    case CUDA_R_32F:
        ((float *)base)[idx] = (float)v;
        break;
    case CUDA_R_64F:
        ((double *)base)[idx] = v;
        break;
    case CUDA_R_16F:
        ((uint16_t *)base)[idx] = fp16_float_to_half((float)v);
        break;
    case CUDA_R_16BF:
        ((uint16_t *)base)[idx] = fp16_float_to_bf16((float)v);
        break;
    default:
        break;
    }
}

/* Index of element (row, col) of op(X), X stored column-major with leading dimension ld. */
static int64_t op_index(const gemm_operand *x, int64_t row, int64_t col)
{
    return x->trans ? col + row * x->ld : row + col * x->ld;
}

static double gelu_tanh(double x)
{
    const double k0 = 0.7978845608028654; /* sqrt(2 / pi) */
    return 0.5 * x * (1.0 + tanh(k0 * (x + 0.044715 * x * x * x)));
}

/* One kernel per accumulation type T: pack op(A) as m x k column-major and op(B) as n rows of
 * k, then accumulate C in blocks of GEMM_MB rows x GEMM_NB columns with axpy-shaped inner loops
 * (vectorizable without reassociating any sum). */
#define GEMM_DEFINE_KERNEL(T, S)                                                                   \
    static void pack_##S(const gemm_problem *p, T *ap, T *bp)                                      \
    {                                                                                              \
        for (int64_t l = 0; l < p->k; l++)                                                         \
            for (int64_t i = 0; i < p->m; i++)                                                     \
                ap[l * p->m + i] = (T)load_elem(p->a.data, p->a.type, op_index(&p->a, i, l));      \
        for (int64_t j = 0; j < p->n; j++)                                                         \
            for (int64_t l = 0; l < p->k; l++)                                                     \
                bp[j * p->k + l] = (T)load_elem(p->b.data, p->b.type, op_index(&p->b, l, j));      \
    }                                                                                              \
                                                                                                   \
    static void accumulate_##S(const gemm_problem *p, const T *ap, const T *bp, int64_t i0,        \
                               int64_t mb, int64_t j0, int64_t nb, T *acc)                         \
    {                                                                                              \
        memset(acc, 0, sizeof(T) * GEMM_MB * GEMM_NB);                                             \
        for (int64_t l = 0; l < p->k; l++) {                                                       \
            const T *restrict a = ap + l * p->m + i0;                                              \
            if (nb == GEMM_NB) {                                                                   \
                T b0 = bp[j0 * p->k + l], b1 = bp[(j0 + 1) * p->k + l];                            \
                T b2 = bp[(j0 + 2) * p->k + l], b3 = bp[(j0 + 3) * p->k + l];                      \
                T *restrict c0 = acc, *restrict c1 = acc + GEMM_MB;                                \
                T *restrict c2 = acc + 2 * GEMM_MB, *restrict c3 = acc + 3 * GEMM_MB;              \
                for (int64_t i = 0; i < mb; i++) {                                                 \
                    c0[i] += a[i] * b0;                                                            \
                    c1[i] += a[i] * b1;                                                            \
                    c2[i] += a[i] * b2;                                                            \
                    c3[i] += a[i] * b3;                                                            \
                }                                                                                  \
                continue;                                                                          \
            }                                                                                      \
            for (int64_t q = 0; q < nb; q++) {                                                     \
                T b = bp[(j0 + q) * p->k + l];                                                     \
                T *restrict c = acc + q * GEMM_MB;                                                 \
                for (int64_t i = 0; i < mb; i++)                                                   \
                    c[i] += a[i] * b;                                                              \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    static void finish_##S(const gemm_problem *p, const T *acc, int64_t i0, int64_t mb,            \
                           int64_t j0, int64_t nb)                                                 \
    {                                                                                              \
        T alpha = (T)p->alpha, beta = (T)p->beta;                                                  \
        for (int64_t q = 0; q < nb; q++) {                                                         \
            for (int64_t i = 0; i < mb; i++) {                                                     \
                int64_t row = i0 + i, col = j0 + q;                                                \
                T v = alpha * acc[q * GEMM_MB + i];                                                \
                if (beta != (T)0)                                                                  \
                    v += beta * (T)load_elem(p->c.data, p->c.type, row + col * p->c.ld);           \
                if (p->bias)                                                                       \
                    v += (T)load_elem(p->bias, p->bias_type, row);                                 \
                if (p->act == GEMM_ACT_RELU && v < (T)0)                                           \
                    v = (T)0;                                                                      \
                else if (p->act == GEMM_ACT_GELU)                                                  \
                    v = (T)gelu_tanh((double)v);                                                   \
                store_elem(p->d, p->d_type, row + col * p->ldd, (double)v);                        \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    static int compute_##S(const gemm_problem *p)                                                  \
    {                                                                                              \
        T *ap = malloc(sizeof(T) * (size_t)(p->m * p->k + 1));                                     \
        T *bp = malloc(sizeof(T) * (size_t)(p->k * p->n + 1));                                     \
        T *acc = malloc(sizeof(T) * GEMM_MB * GEMM_NB);                                            \
        int rc = (ap && bp && acc) ? 0 : -1;                                                       \
        if (rc == 0) {                                                                             \
            pack_##S(p, ap, bp);                                                                   \
            for (int64_t i0 = 0; i0 < p->m; i0 += GEMM_MB) {                                       \
                int64_t mb = p->m - i0 < GEMM_MB ? p->m - i0 : GEMM_MB;                            \
                for (int64_t j0 = 0; j0 < p->n; j0 += GEMM_NB) {                                   \
                    int64_t nb = p->n - j0 < GEMM_NB ? p->n - j0 : GEMM_NB;                        \
                    accumulate_##S(p, ap, bp, i0, mb, j0, nb, acc);                                \
                    finish_##S(p, acc, i0, mb, j0, nb);                                            \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
        free(acc);                                                                                 \
        free(bp);                                                                                  \
        free(ap);                                                                                  \
        return rc;                                                                                 \
    }

GEMM_DEFINE_KERNEL(float, f32)
GEMM_DEFINE_KERNEL(double, f64)

int gemm_compute(const gemm_problem *p)
{
    if (p->m <= 0 || p->n <= 0)
        return 0;
    return p->compute_f64 ? compute_f64(p) : compute_f32(p);
}
