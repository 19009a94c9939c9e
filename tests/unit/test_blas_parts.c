/* The pure parts of the cuBLAS hooks: operand extents and scalars (gemm_range), the lock-free
 * descriptor side table (ltdesc) alone and under threads, and the registry's category change
 * the workspace retag relies on. */
#include <criterion/criterion.h>

#include "gemm_range.h"
#include "ltdesc.h"
#include "registry.h"

#include <cublasLt.h>
#include <pthread.h>
#include <string.h>

/* ---- gemm_range ---- */

Test(gemm_range, column_major_extent)
{
    /* ld * (cols - 1) + rows elements */
    cr_assert_eq(gemm_range_matrix_bytes(CUDA_R_32F, 3, 4, 5), (5 * 3 + 3) * 4);
    cr_assert_eq(gemm_range_matrix_bytes(CUDA_R_64F, 2, 1, 100), 2 * 8, "one column: rows only");
    cr_assert_eq(gemm_range_matrix_bytes(CUDA_R_16F, 4, 2, 4), 8 * 2);
    cr_assert_eq(gemm_range_matrix_bytes(CUDA_C_32F, 2, 2, 2), 4 * 8);
    cr_assert_eq(gemm_range_matrix_bytes(CUDA_R_4F_E2M1, 3, 1, 3), 2, "4-bit: rounded up");
    cr_assert_eq(gemm_range_matrix_bytes(CUDA_R_32F, 0, 4, 5), 0, "empty");
    cr_assert_eq(gemm_range_matrix_bytes(CUDA_R_32F, 3, 0, 5), 0, "empty");
    cr_assert_eq(gemm_range_matrix_bytes(1234, 3, 4, 5), 0, "unknown type");
    cr_assert_eq(gemm_range_matrix_bytes(CUDA_R_32F, 4, 2, 1), 8 * 4, "ld < rows spans rows");
    cr_assert_eq(gemm_range_matrix_bytes(CUDA_R_32F, 1, UINT64_MAX, UINT64_MAX), UINT64_MAX);
}

Test(gemm_range, batched_spans)
{
    struct access_range r;
    cr_assert_eq(gemm_range_batched(&r, 0x1000, 16, 64, 3, 1), 1);
    cr_assert_eq(r.addr, 0x1000);
    cr_assert_eq(r.size, 2 * 64 + 16);
    cr_assert_eq(r.mode, 1);
    cr_assert_eq(gemm_range_batched(&r, 0x1000, 16, 0, 3, 2), 1, "broadcast");
    cr_assert_eq(r.size, 16);
    cr_assert_eq(gemm_range_batched(&r, 0x1000, 16, -64, 3, 1), 1, "negative stride");
    cr_assert_eq(r.addr, 0x1000 - 128);
    cr_assert_eq(r.size, 128 + 16);
    cr_assert_eq(gemm_range_batched(&r, 0x1000, 16, 8, 3, 1), 1, "overlapping members");
    cr_assert_eq(r.size, 16 + 16);
    cr_assert_eq(gemm_range_batched(&r, 0, 16, 8, 3, 1), 0, "null pointer");
    cr_assert_eq(gemm_range_batched(&r, 0x1000, 0, 8, 3, 1), 0, "empty matrix");
    cr_assert_eq(gemm_range_batched(&r, 0x1000, 16, 8, 0, 1), 0, "no batch");
}

Test(gemm_range, scalars)
{
    float fz = 0.0f, fnz = -0.0f, f1 = 1.0f, fnan = __builtin_nanf("");
    double dz = 0.0, d1 = 0.5;
    uint16_t hz = 0x8000, h1 = 0x3c00;
    float cz[2] = {0.0f, 0.0f}, ci[2] = {0.0f, 1.0f};
    int32_t iz = 0, i1 = 3;
    cr_assert(gemm_range_scalar_is_zero(&fz, CUDA_R_32F));
    cr_assert(gemm_range_scalar_is_zero(&fnz, CUDA_R_32F), "-0 is zero");
    cr_assert_not(gemm_range_scalar_is_zero(&f1, CUDA_R_32F));
    cr_assert_not(gemm_range_scalar_is_zero(&fnan, CUDA_R_32F), "NaN reads C");
    cr_assert(gemm_range_scalar_is_zero(&dz, CUDA_R_64F));
    cr_assert_not(gemm_range_scalar_is_zero(&d1, CUDA_R_64F));
    cr_assert(gemm_range_scalar_is_zero(&hz, CUDA_R_16F));
    cr_assert_not(gemm_range_scalar_is_zero(&h1, CUDA_R_16F));
    cr_assert(gemm_range_scalar_is_zero(cz, CUDA_C_32F));
    cr_assert_not(gemm_range_scalar_is_zero(ci, CUDA_C_32F), "imaginary part counts");
    cr_assert(gemm_range_scalar_is_zero(&iz, CUDA_R_32I));
    cr_assert_not(gemm_range_scalar_is_zero(&i1, CUDA_R_32I));
    cr_assert_not(gemm_range_scalar_is_zero(&fz, -1), "unknown type: not zero");
    cr_assert_not(gemm_range_scalar_is_zero(NULL, CUDA_R_32F));
    cr_assert_eq(gemm_range_scale_type(CUBLAS_COMPUTE_32F, CUDA_R_16F), CUDA_R_32F);
    cr_assert_eq(gemm_range_scale_type(CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_C_32F), CUDA_C_32F);
    cr_assert_eq(gemm_range_scale_type(CUBLAS_COMPUTE_16F, CUDA_R_16F), CUDA_R_16F);
    cr_assert_eq(gemm_range_scale_type(CUBLAS_COMPUTE_64F, CUDA_R_64F), CUDA_R_64F);
    cr_assert_eq(gemm_range_scale_type(CUBLAS_COMPUTE_32I, CUDA_R_32I), CUDA_R_32I);
    cr_assert_eq(gemm_range_scale_type(12345, CUDA_R_32F), -1);
    cr_assert_eq(gemm_range_flops(3, 2, 4, 5), 2 * 3 * 2 * 4 * 5);
    cr_assert_eq(gemm_range_flops(1ull << 40, 1ull << 40, 1, 1), UINT64_MAX, "saturates");
    cr_assert_eq(gemm_range_dtype_byte(CUDA_R_16BF), CUDA_R_16BF);
    cr_assert_eq(gemm_range_dtype_byte(-1), 0xff);
}

/* ---- ltdesc ---- */

TestSuite(ltdesc, .init = ltdesc_reset);

Test(ltdesc, put_get_drop_reuse)
{
    union ltdesc_value v, out;
    ltdesc_layout_init(&v.layout, CUDA_R_16F, 4, 3, 8);
    cr_assert_eq(ltdesc_put(0x5000, LTDESC_LAYOUT, &v), 0);
    cr_assert_eq(ltdesc_get(0x5000, LTDESC_LAYOUT, &out), 1);
    cr_assert_eq(out.layout.rows, 4);
    cr_assert_eq(out.layout.ld, 8);
    cr_assert_eq(out.layout.batch_count, 1);
    cr_assert_eq(ltdesc_get(0x5000, LTDESC_MATMUL, &out), 0, "another kind at that address");
    cr_assert_eq(ltdesc_get(0x6000, LTDESC_LAYOUT, &out), 0);
    ltdesc_drop(0x5000);
    cr_assert_eq(ltdesc_get(0x5000, LTDESC_LAYOUT, &out), 0, "dropped");
    ltdesc_matmul_init(&v.matmul, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    cr_assert_eq(ltdesc_put(0x5000, LTDESC_MATMUL, &v), 0, "address reused by another object");
    cr_assert_eq(ltdesc_get(0x5000, LTDESC_MATMUL, &out), 1);
    cr_assert_eq(out.matmul.bias_type, -1);
    cr_assert_eq(ltdesc_put(0, LTDESC_MATMUL, &v), -1, "no object at 0");
}

Test(ltdesc, changed_in_place)
{
    union ltdesc_value v, out;
    ltdesc_layout_init(&v.layout, CUDA_R_32F, 16, 8, 16);
    cr_assert_eq(ltdesc_put(0x7000, LTDESC_LAYOUT, &v), 0);
    cr_assert_null(ltdesc_at(0x7000, LTDESC_MATMUL), "another kind");
    cr_assert_null(ltdesc_at(0x8000, LTDESC_LAYOUT), "no such object");
    union ltdesc_value *at = ltdesc_at(0x7000, LTDESC_LAYOUT);
    cr_assert_not_null(at);
    int32_t count = 5;
    ltdesc_layout_set(&at->layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count);
    cr_assert_eq(ltdesc_get(0x7000, LTDESC_LAYOUT, &out), 1);
    cr_assert_eq(out.layout.batch_count, 5, "the change is what a later get reads");
    cr_assert_eq(out.layout.rows, 16);
    ltdesc_drop(0x7000);
    cr_assert_null(ltdesc_at(0x7000, LTDESC_LAYOUT), "dropped");
}

Test(ltdesc, attributes_by_exact_size)
{
    struct ltdesc_matmul d;
    ltdesc_matmul_init(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    int32_t t = CUBLAS_OP_T;
    uint32_t epi = CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    uint64_t bias = 0xb1a5, aux = 0xa0c;
    int64_t ld = 96;
    ltdesc_matmul_set(&d, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t);
    ltdesc_matmul_set(&d, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
    ltdesc_matmul_set(&d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
    ltdesc_matmul_set(&d, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof aux);
    ltdesc_matmul_set(&d, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof ld);
    ltdesc_matmul_set(&d, CUBLASLT_MATMUL_DESC_TRANSB, &t, 2); /* wrong size: refused */
    ltdesc_matmul_set(&d, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &bias, sizeof bias);
    cr_assert_eq(d.transa, CUBLAS_OP_T);
    cr_assert_eq(d.transb, CUBLAS_OP_N);
    cr_assert_eq(d.epilogue, CUBLASLT_EPILOGUE_GELU_AUX_BIAS);
    cr_assert_eq(d.bias, 0xb1a5);
    cr_assert_eq(d.aux, 0xa0c);
    cr_assert_eq(d.aux_ld, 96);
    cr_assert_eq(d.scale_a, 0xb1a5);
    struct ltdesc_layout l;
    ltdesc_layout_init(&l, CUDA_R_32F, 4, 3, 4);
    int32_t batch = 7, order = CUBLASLT_ORDER_ROW;
    int64_t off = 1234;
    uint32_t type = CUDA_R_16BF;
    ltdesc_layout_set(&l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch);
    ltdesc_layout_set(&l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &off, sizeof off);
    ltdesc_layout_set(&l, CUBLASLT_MATRIX_LAYOUT_ORDER, &order, sizeof order);
    ltdesc_layout_set(&l, CUBLASLT_MATRIX_LAYOUT_TYPE, &type, sizeof type);
    cr_assert_eq(l.batch_count, 7);
    cr_assert_eq(l.batch_offset, 1234);
    cr_assert_eq(l.order, CUBLASLT_ORDER_ROW);
    cr_assert_eq(l.type, CUDA_R_16BF);
}

/* ltdesc.c's home slot of a key (4096 slots), to build keys that collide. */
static uint32_t home(uint64_t key)
{
    return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 40) & 4095u;
}

Test(ltdesc, full_window_refuses_then_a_drop_makes_room)
{
    union ltdesc_value v, out;
    ltdesc_layout_init(&v.layout, CUDA_R_32F, 1, 1, 1);
    uint64_t keys[33];
    int n = 0;
    for (uint64_t k = 0x10000; n < 33; k += 16)
        if (home(k) == home(0x10000))
            keys[n++] = k;
    for (int i = 0; i < 32; i++)
        cr_assert_eq(ltdesc_put(keys[i], LTDESC_LAYOUT, &v), 0, "key %d", i);
    cr_assert_eq(ltdesc_put(keys[32], LTDESC_LAYOUT, &v), -1, "the probe window is full");
    for (int i = 0; i < 32; i++)
        cr_assert_eq(ltdesc_get(keys[i], LTDESC_LAYOUT, &out), 1, "key %d kept", i);
    ltdesc_drop(keys[5]);
    cr_assert_eq(ltdesc_put(keys[32], LTDESC_LAYOUT, &v), 0, "the tombstone is reused");
    cr_assert_eq(ltdesc_get(keys[32], LTDESC_LAYOUT, &out), 1);
    cr_assert_eq(ltdesc_get(keys[31], LTDESC_LAYOUT, &out), 1, "found past the reused slot");
}

Test(ltdesc, many_keys_and_churn)
{
    union ltdesc_value v;
    ltdesc_layout_init(&v.layout, CUDA_R_32F, 1, 1, 1);
    int stored = 0;
    uint64_t keys[64];
    for (uint64_t i = 0; i < 64; i++) {
        keys[i] = 0x10000 + i * 8;
        stored += ltdesc_put(keys[i], LTDESC_LAYOUT, &v) == 0;
    }
    cr_assert_eq(stored, 64, "distinct homes: all fit");
    for (uint64_t i = 0; i < 64; i++) {
        union ltdesc_value out;
        cr_assert_eq(ltdesc_get(keys[i], LTDESC_LAYOUT, &out), 1);
        ltdesc_drop(keys[i]);
        cr_assert_eq(ltdesc_get(keys[i], LTDESC_LAYOUT, &out), 0);
    }
    /* churn (create/destroy per call, as frameworks do) never fills the table */
    for (uint64_t i = 0; i < 100000; i++) {
        uint64_t k = 0x7f0000000000ull + (i % 97) * 4096 + (i / 97) * 16;
        cr_assert_eq(ltdesc_put(k, LTDESC_LAYOUT, &v), 0, "churn put %llu", (unsigned long long)i);
        ltdesc_drop(k);
    }
}

struct lt_thread {
    uint64_t base;
    int errors;
};

static void *lt_worker(void *arg)
{
    struct lt_thread *t = arg;
    for (uint64_t i = 0; i < 20000; i++) {
        uint64_t key = t->base + (i % 50) * 64;
        union ltdesc_value v, out;
        ltdesc_layout_init(&v.layout, CUDA_R_32F, key, i, (int64_t)key);
        if (ltdesc_put(key, LTDESC_LAYOUT, &v) != 0) {
            t->errors++;
            continue;
        }
        if (!ltdesc_get(key, LTDESC_LAYOUT, &out) || out.layout.rows != key || out.layout.cols != i)
            t->errors++;
        ltdesc_drop(key);
    }
    return NULL;
}

Test(ltdesc, threads_on_their_own_objects)
{
    pthread_t th[4];
    struct lt_thread t[4];
    for (int i = 0; i < 4; i++) {
        t[i] = (struct lt_thread){.base = 0x100000ull * (uint64_t)(i + 1)};
        pthread_create(&th[i], NULL, lt_worker, &t[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        cr_assert_eq(t[i].errors, 0, "thread %d saw %d wrong entries", i, t[i].errors);
    }
}

/* ---- registry category change (workspace retag) ---- */

Test(registry_category, changes_shard_and_index, .init = registry_reset)
{
    struct registry_entry e = {.addr = 0x40000, .size = 0x1000, .category = 0}, old, out;
    cr_assert_eq(registry_insert(REGISTRY_ADDR, &e, NULL), 0);
    cr_assert_eq(registry_set_category(REGISTRY_ADDR, 0x40000, 6, &old), 1);
    cr_assert_eq(old.category, 0);
    cr_assert_eq(registry_lookup(REGISTRY_ADDR, 0x40000, &out), 1);
    cr_assert_eq(out.category, 6);
    cr_assert_eq(registry_containing(REGISTRY_ADDR, 0x40800, &out), 1);
    cr_assert_eq(out.category, 6, "the containment index's copy follows");
    cr_assert_eq(out.size, 0x1000);
    cr_assert_eq(registry_set_category(REGISTRY_ADDR, 0x40800, 6, NULL), 0, "exact key only");
}
