/* The CPU GEMM kernel of simcuda's cuBLAS: every transpose combination, odd sizes across the
 * blocking edges, each element type, epilogues and beta = 0 semantics, against a float64
 * reference; and bit-identical results on repeated runs. No driver needed. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fp16.h"
#include "gemm_cpu.h"

typedef struct matrix {
    void *data;
    cudaDataType_t type;
    int64_t rows, cols, ld;
} matrix;

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static double next_uniform(void)
{
    rng_state = rng_state * 6364136223846793005u + 1442695040888963407u;
    return (double)(rng_state >> 11) / (double)(1ull << 53) * 2.0 - 1.0;
}

static double get(const matrix *x, int64_t r, int64_t c)
{
    int64_t i = r + c * x->ld;
    switch (x->type) {
    case CUDA_R_32F:
        return ((float *)x->data)[i];
    case CUDA_R_64F:
        return ((double *)x->data)[i];
    case CUDA_R_16F:
        return fp16_half_to_float(((uint16_t *)x->data)[i]);
    default:
        return fp16_bf16_to_float(((uint16_t *)x->data)[i]);
    }
}

static void set(matrix *x, int64_t r, int64_t c, double v)
{
    int64_t i = r + c * x->ld;
    switch (x->type) {
    case CUDA_R_32F:
        ((float *)x->data)[i] = (float)v;
        break;
    case CUDA_R_64F:
        ((double *)x->data)[i] = v;
        break;
    case CUDA_R_16F:
        ((uint16_t *)x->data)[i] = fp16_float_to_half((float)v);
        break;
    default:
        ((uint16_t *)x->data)[i] = fp16_float_to_bf16((float)v);
        break;
    }
}

/* A column-major matrix with a padded leading dimension; padding holds NaN so that reading it
 * would poison the result. */
static matrix make(cudaDataType_t type, int64_t rows, int64_t cols)
{
    matrix x = {.type = type, .rows = rows, .cols = cols, .ld = rows + 3};
    x.data = malloc(gemm_type_size(type) * (size_t)(x.ld * cols));
    for (int64_t c = 0; c < cols; c++)
        for (int64_t r = 0; r < x.ld; r++)
            set(&x, r, c, r < rows ? next_uniform() : NAN);
    return x;
}

static double ulp_of(cudaDataType_t type)
{
    switch (type) {
    case CUDA_R_64F:
        return 0x1p-52;
    case CUDA_R_32F:
        return 0x1p-23;
    case CUDA_R_16F:
        return 0x1p-10;
    default:
        return 0x1p-7;
    }
}

typedef struct case_spec {
    int64_t m, n, k;
    bool ta, tb;
    cudaDataType_t in, out;
    bool f64;
    double alpha, beta;
    gemm_act act;
    bool bias;
} case_spec;

static double act_ref(gemm_act act, double v)
{
    if (act == GEMM_ACT_RELU)
        return v < 0 ? 0 : v;
    if (act == GEMM_ACT_GELU)
        return 0.5 * v * (1.0 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
    return v;
}

static void check_case(const case_spec *s)
{
    matrix a = make(s->in, s->ta ? s->k : s->m, s->ta ? s->m : s->k);
    matrix b = make(s->in, s->tb ? s->n : s->k, s->tb ? s->k : s->n);
    matrix c = make(s->out, s->m, s->n);
    matrix c0 = make(CUDA_R_64F, s->m, s->n);
    matrix bias = make(s->out, s->m, 1);
    for (int64_t j = 0; j < s->n; j++)
        for (int64_t i = 0; i < s->m; i++)
            set(&c0, i, j, s->beta == 0 ? NAN : get(&c, i, j));
    if (s->beta == 0) /* beta = 0: C must not be read, even when it holds NaN */
        for (int64_t j = 0; j < s->n; j++)
            for (int64_t i = 0; i < s->m; i++)
                set(&c, i, j, NAN);
    gemm_problem p = {.m = s->m,
                      .n = s->n,
                      .k = s->k,
                      .a = {a.data, a.type, a.ld, s->ta},
                      .b = {b.data, b.type, b.ld, s->tb},
                      .c = {c.data, c.type, c.ld, false},
                      .d = c.data,
                      .d_type = c.type,
                      .ldd = c.ld,
                      .alpha = s->alpha,
                      .beta = s->beta,
                      .compute_f64 = s->f64,
                      .bias = s->bias ? bias.data : NULL,
                      .bias_type = bias.type,
                      .act = s->act};
    cr_assert_eq(gemm_compute(&p), 0);
    double eps = s->f64 ? 0x1p-52 : 0x1p-23;
    for (int64_t j = 0; j < s->n; j++) {
        for (int64_t i = 0; i < s->m; i++) {
            double ref = 0, mag = 0;
            for (int64_t l = 0; l < s->k; l++) {
                double x = s->ta ? get(&a, l, i) : get(&a, i, l);
                double y = s->tb ? get(&b, j, l) : get(&b, l, j);
                ref += x * y;
                mag += fabs(x * y);
            }
            ref *= s->alpha;
            if (s->beta != 0)
                ref += s->beta * get(&c0, i, j);
            if (s->bias)
                ref += get(&bias, i, 0);
            double pre = fabs(ref);
            ref = act_ref(s->act, ref);
            double tol = (s->k + 4) * eps * (fabs(s->alpha) * mag + pre + 1) +
                         ulp_of(s->out) * (fabs(ref) + 1e-30);
            double got = get(&c, i, j);
            cr_assert(fabs(got - ref) <= tol,
                      "m%ld n%ld k%ld ta%d tb%d in%d out%d at (%ld,%ld): got %.9g want %.9g",
                      (long)s->m, (long)s->n, (long)s->k, s->ta, s->tb, s->in, s->out, (long)i,
                      (long)j, got, ref);
        }
    }
    free(a.data), free(b.data), free(c.data), free(c0.data), free(bias.data);
}

static const int64_t sizes[][3] = {{1, 1, 1},      {7, 5, 3},   {33, 17, 65}, {130, 9, 21},
                                   {129, 131, 67}, {3, 200, 1}, {64, 4, 0}};

static void sweep(cudaDataType_t in, cudaDataType_t out, bool f64, double alpha, double beta)
{
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++)
        for (int t = 0; t < 4; t++) {
            case_spec s = {sizes[z][0], sizes[z][1], sizes[z][2], t & 1, t >> 1,        in,
                           out,         f64,         alpha,       beta,  GEMM_ACT_NONE, false};
            check_case(&s);
        }
}

Test(sim_gemm, fp32_all_transposes_and_odd_sizes)
{
    sweep(CUDA_R_32F, CUDA_R_32F, false, 1.0, 0.0);
    sweep(CUDA_R_32F, CUDA_R_32F, false, 1.5, -0.5);
}

Test(sim_gemm, fp64)
{
    sweep(CUDA_R_64F, CUDA_R_64F, true, 0.75, 2.0);
}

Test(sim_gemm, fp16_and_bf16_inputs)
{
    sweep(CUDA_R_16F, CUDA_R_32F, false, 1.0, 1.0);
    sweep(CUDA_R_16F, CUDA_R_16F, false, 1.0, 0.0);
    sweep(CUDA_R_16BF, CUDA_R_32F, false, 2.0, 0.0);
    sweep(CUDA_R_16BF, CUDA_R_16BF, false, 1.0, 0.5);
}

Test(sim_gemm, bias_and_activations)
{
    gemm_act acts[] = {GEMM_ACT_NONE, GEMM_ACT_RELU, GEMM_ACT_GELU};
    for (int x = 0; x < 3; x++) {
        case_spec s = {37,         11,    19,  true, false,   CUDA_R_32F,
                       CUDA_R_32F, false, 1.0, 0.0,  acts[x], true};
        check_case(&s);
        s.in = s.out = CUDA_R_16BF;
        s.beta = 1.0;
        check_case(&s);
    }
}

Test(sim_gemm, repeated_runs_are_bit_identical)
{
    matrix a = make(CUDA_R_32F, 150, 70), b = make(CUDA_R_32F, 70, 45);
    matrix c1 = make(CUDA_R_32F, 150, 45), c2 = make(CUDA_R_32F, 150, 45);
    gemm_problem p = {.m = 150,
                      .n = 45,
                      .k = 70,
                      .a = {a.data, a.type, a.ld, false},
                      .b = {b.data, b.type, b.ld, false},
                      .c = {c1.data, c1.type, c1.ld, false},
                      .d = c1.data,
                      .d_type = CUDA_R_32F,
                      .ldd = c1.ld,
                      .alpha = 1.0};
    cr_assert_eq(gemm_compute(&p), 0);
    p.c.data = p.d = c2.data;
    cr_assert_eq(gemm_compute(&p), 0);
    for (int64_t j = 0; j < 45; j++)
        cr_assert_eq(
            memcmp((float *)c1.data + j * c1.ld, (float *)c2.data + j * c2.ld, 150 * sizeof(float)),
            0);
    free(a.data), free(b.data), free(c1.data), free(c2.data);
}

Test(sim_gemm, half_conversions_round_to_nearest_even)
{
    cr_assert_eq(fp16_float_to_half(1.0f), 0x3c00);
    cr_assert_eq(fp16_float_to_half(65504.0f), 0x7bff);
    cr_assert_eq(fp16_float_to_half(65520.0f), 0x7c00);
    cr_assert_eq(fp16_float_to_half(0x1p-24f), 0x0001);
    cr_assert_eq(fp16_float_to_half(1.0f + 0x1p-11f), 0x3c00); /* tie to even */
    cr_assert_eq(fp16_float_to_half(1.0f + 0x3p-11f), 0x3c02);
    cr_assert_eq(fp16_half_to_float(0x0001), 0x1p-24f);
    cr_assert_eq(fp16_float_to_bf16(1.0f + 0x1p-8f), 0x3f80); /* tie to even */
    cr_assert_eq(fp16_bf16_to_float(0x3f81), 1.0f + 0x1p-7f);
    cr_assert(isnan(fp16_half_to_float(fp16_float_to_half(NAN))));
}
