/* lineage: records of replayable GEMMs and their replay; see lineage.h. */
#include "lineage.h"

#include <string.h>

#include "arena.h"
#include "gemm_range.h"
#include "guard.h"
#include "real_blas.h"
#include "registry.h"

/* A counting filter over input bases: a zero counter proves no live lineage reads a base, so a
 * write to an allocation nothing was computed from costs one load. */
#define LINEAGE_FILTER 4096u

static struct lineage *lin_live, *lin_free;
static uint32_t lin_filter[LINEAGE_FILTER];

static uint32_t lin_slot(uint64_t base)
{
    return (uint32_t)((base * 0x9e3779b97f4a7c15ull) >> 52) % LINEAGE_FILTER;
}

struct lineage *lineage_new(void)
{
    struct lineage *l = lin_free;
    if (l) {
        lin_free = l->next_free;
        memset(l, 0, sizeof *l);
        return l;
    }
    return arena_alloc(sizeof *l); /* zeroed, like every fresh arena block */
}

void lineage_link(struct lineage *l)
{
    for (unsigned i = 0; i < l->nin; i++)
        lin_filter[lin_slot(l->in[i])]++;
    l->prev = NULL;
    l->next = lin_live;
    if (lin_live)
        lin_live->prev = l;
    lin_live = l;
}

void lineage_forget(struct lineage *l)
{
    for (unsigned i = 0; i < l->nin; i++)
        lin_filter[lin_slot(l->in[i])]--;
    if (l->prev)
        l->prev->next = l->next;
    else
        lin_live = l->next;
    if (l->next)
        l->next->prev = l->prev;
    l->next_free = lin_free;
    lin_free = l;
}

struct lineage *lineage_first(void)
{
    return lin_live;
}

int lineage_may_read(uint64_t base)
{
    return lin_filter[lin_slot(base)] != 0;
}

int lineage_reads(const struct lineage *l, uint64_t base)
{
    for (unsigned i = 0; i < l->nin; i++)
        if (l->in[i] == base)
            return 1;
    return 0;
}

#define P(x) ((const void *)(uintptr_t)(x))
#define W(x) ((void *)(uintptr_t)(x))

/* The call itself, by entry point. Narrowing to int is exact: the values came from an int
 * parameter of the same entry point. */
static cublasStatus_t lin_call(cublasHandle_t h, const struct lineage_call *c)
{
    cublasOperation_t ta = (cublasOperation_t)c->transa, tb = (cublasOperation_t)c->transb;
    const void *al = c->alpha, *be = c->beta;
    cudaDataType at = (cudaDataType)c->dt_a, bt = (cudaDataType)c->dt_b, ct = (cudaDataType)c->dt_c;
    cublasComputeType_t comp = (cublasComputeType_t)c->compute;
    cublasGemmAlgo_t algo = (cublasGemmAlgo_t)c->algo;
    int m = (int)c->m, n = (int)c->n, k = (int)c->k, lda = (int)c->lda, ldb = (int)c->ldb,
        ldc = (int)c->ldc, batch = (int)c->batch;
#define LIN_FN(name) __typeof__(real_blas.name) fn = REAL_BLAS(BLAS_LIB_CUBLAS, name)
    switch (c->fn) {
    case LINEAGE_FN_cublasSgemm_v2: {
        LIN_FN(cublasSgemm_v2);
        return fn ? fn(h, ta, tb, m, n, k, al, P(c->a), lda, P(c->b), ldb, be, W(c->c), ldc)
                  : CUBLAS_STATUS_NOT_INITIALIZED;
    }
    case LINEAGE_FN_cublasSgemm_v2_64: {
        LIN_FN(cublasSgemm_v2_64);
        return fn ? fn(h, ta, tb, c->m, c->n, c->k, al, P(c->a), c->lda, P(c->b), c->ldb, be,
                       W(c->c), c->ldc)
                  : CUBLAS_STATUS_NOT_INITIALIZED;
    }
    case LINEAGE_FN_cublasDgemm_v2: {
        LIN_FN(cublasDgemm_v2);
        return fn ? fn(h, ta, tb, m, n, k, al, P(c->a), lda, P(c->b), ldb, be, W(c->c), ldc)
                  : CUBLAS_STATUS_NOT_INITIALIZED;
    }
    case LINEAGE_FN_cublasDgemm_v2_64: {
        LIN_FN(cublasDgemm_v2_64);
        return fn ? fn(h, ta, tb, c->m, c->n, c->k, al, P(c->a), c->lda, P(c->b), c->ldb, be,
                       W(c->c), c->ldc)
                  : CUBLAS_STATUS_NOT_INITIALIZED;
    }
    case LINEAGE_FN_cublasHgemm: {
        LIN_FN(cublasHgemm);
        return fn ? fn(h, ta, tb, m, n, k, al, P(c->a), lda, P(c->b), ldb, be, W(c->c), ldc)
                  : CUBLAS_STATUS_NOT_INITIALIZED;
    }
    case LINEAGE_FN_cublasHgemm_64: {
        LIN_FN(cublasHgemm_64);
        return fn ? fn(h, ta, tb, c->m, c->n, c->k, al, P(c->a), c->lda, P(c->b), c->ldb, be,
                       W(c->c), c->ldc)
                  : CUBLAS_STATUS_NOT_INITIALIZED;
    }
    case LINEAGE_FN_cublasGemmEx: {
        LIN_FN(cublasGemmEx);
        return fn ? fn(h, ta, tb, m, n, k, al, P(c->a), at, lda, P(c->b), bt, ldb, be, W(c->c), ct,
                       ldc, comp, algo)
                  : CUBLAS_STATUS_NOT_INITIALIZED;
    }
    case LINEAGE_FN_cublasGemmEx_64: {
        LIN_FN(cublasGemmEx_64);
        return fn ? fn(h, ta, tb, c->m, c->n, c->k, al, P(c->a), at, c->lda, P(c->b), bt, c->ldb,
                       be, W(c->c), ct, c->ldc, comp, algo)
                  : CUBLAS_STATUS_NOT_INITIALIZED;
    }
    case LINEAGE_FN_cublasSgemmStridedBatched: {
        LIN_FN(cublasSgemmStridedBatched);
        return fn ? fn(h, ta, tb, m, n, k, al, P(c->a), lda, c->stride_a, P(c->b), ldb, c->stride_b,
                       be, W(c->c), ldc, c->stride_c, batch)
                  : CUBLAS_STATUS_NOT_INITIALIZED;
    }
    case LINEAGE_FN_cublasSgemmStridedBatched_64: {
        LIN_FN(cublasSgemmStridedBatched_64);
        return fn ? fn(h, ta, tb, c->m, c->n, c->k, al, P(c->a), c->lda, c->stride_a, P(c->b),
                       c->ldb, c->stride_b, be, W(c->c), c->ldc, c->stride_c, c->batch)
                  : CUBLAS_STATUS_NOT_INITIALIZED;
    }
    case LINEAGE_FN_cublasGemmStridedBatchedEx: {
        LIN_FN(cublasGemmStridedBatchedEx);
        return fn ? fn(h, ta, tb, m, n, k, al, P(c->a), at, lda, c->stride_a, P(c->b), bt, ldb,
                       c->stride_b, be, W(c->c), ct, ldc, c->stride_c, batch, comp, algo)
                  : CUBLAS_STATUS_NOT_INITIALIZED;
    }
    case LINEAGE_FN_cublasGemmStridedBatchedEx_64: {
        LIN_FN(cublasGemmStridedBatchedEx_64);
        return fn ? fn(h, ta, tb, c->m, c->n, c->k, al, P(c->a), at, c->lda, c->stride_a, P(c->b),
                       bt, c->ldb, c->stride_b, be, W(c->c), ct, c->ldc, c->stride_c, c->batch,
                       comp, algo)
                  : CUBLAS_STATUS_NOT_INITIALIZED;
    }
    default:
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
#undef LIN_FN
}

int lineage_replay(const struct lineage *l)
{
    const struct lineage_call *c = &l->call;
    cublasHandle_t h = (cublasHandle_t)(uintptr_t)c->handle;
    __typeof__(&cublasGetStream_v2) get_stream = REAL_BLAS(BLAS_LIB_CUBLAS, cublasGetStream_v2);
    __typeof__(&cublasSetStream_v2) set_stream = REAL_BLAS(BLAS_LIB_CUBLAS, cublasSetStream_v2);
    __typeof__(&cublasGetMathMode) get_math = REAL_BLAS(BLAS_LIB_CUBLAS, cublasGetMathMode);
    __typeof__(&cublasSetMathMode) set_math = REAL_BLAS(BLAS_LIB_CUBLAS, cublasSetMathMode);
    __typeof__(&cublasGetPointerMode_v2) get_pm =
        REAL_BLAS(BLAS_LIB_CUBLAS, cublasGetPointerMode_v2);
    __typeof__(&cublasSetPointerMode_v2) set_pm =
        REAL_BLAS(BLAS_LIB_CUBLAS, cublasSetPointerMode_v2);
    /* Each piece of handle state is switched only when it can be read back and restored. */
    cudaStream_t stream = NULL;
    cublasMath_t math = CUBLAS_DEFAULT_MATH;
    cublasPointerMode_t pm = CUBLAS_POINTER_MODE_HOST;
    int s_set = 0, m_set = 0, p_set = 0;
    if (!get_stream || !set_stream || get_stream(h, &stream) != CUBLAS_STATUS_SUCCESS)
        return CUBLAS_STATUS_NOT_INITIALIZED; /* the stream decides ordering: no replay without */
    if ((uint64_t)(uintptr_t)stream != c->stream) {
        if (set_stream(h, (cudaStream_t)(uintptr_t)c->stream) != CUBLAS_STATUS_SUCCESS)
            return CUBLAS_STATUS_EXECUTION_FAILED;
        s_set = 1;
    }
    if (c->has_math_mode && get_math && set_math && get_math(h, &math) == CUBLAS_STATUS_SUCCESS &&
        (int)math != c->math_mode)
        m_set = set_math(h, (cublasMath_t)c->math_mode) == CUBLAS_STATUS_SUCCESS;
    if (get_pm && set_pm && get_pm(h, &pm) == CUBLAS_STATUS_SUCCESS &&
        pm != CUBLAS_POINTER_MODE_HOST)
        p_set = set_pm(h, CUBLAS_POINTER_MODE_HOST) == CUBLAS_STATUS_SUCCESS;
    guard_blas_enter();
    cublasStatus_t r = lin_call(h, c);
    guard_blas_leave();
    if (p_set)
        set_pm(h, pm);
    if (m_set)
        set_math(h, math);
    if (s_set)
        set_stream(h, stream);
    return (int)r;
}

/* The tracked allocation (REGISTRY_ADDR) holding the `bytes` at addr, 0 when there is none or
 * they do not fit in it. */
static uint64_t lin_alloc_of(uint64_t addr, uint64_t bytes)
{
    struct registry_entry e;
    if (!registry_containing(REGISTRY_ADDR, addr, &e))
        return 0;
    return bytes <= e.size && addr - e.addr <= e.size - bytes ? e.addr : 0;
}

/* Bytes of op(X) of rows x cols with leading dimension ld over the batch; 0 when unknown. */
static uint64_t lin_operand(const struct lineage_call *c, int dtype, int trans, int64_t rows,
                            int64_t cols, int64_t ld, int64_t stride)
{
    uint64_t r, k;
    gemm_range_stored(trans, rows, cols, &r, &k);
    return gemm_range_extent(dtype, gemm_range_matrix_bytes(dtype, r, k, (uint64_t)ld), stride,
                             c->batch);
}

int lineage_rule(const struct lineage_call *c, int scale_type, int host_beta_zero,
                 uint64_t in[LINEAGE_MAX_IN], unsigned *nin)
{
    *nin = 0;
    if (c->fn >= LINEAGE_FN_cublasGemmBatchedEx || !host_beta_zero || c->m <= 0 || c->n <= 0 ||
        c->k < 0 || c->batch <= 0)
        return 0;
    /* C contiguous: columns back to back, batch members back to back. */
    if (!(c->ldc == c->m || c->n == 1) || (c->batch > 1 && c->stride_c != c->ldc * c->n))
        return 0;
    unsigned bits = gemm_range_dtype_bits(c->dt_c), sbits = gemm_range_dtype_bits(scale_type);
    if (!bits || !sbits || sbits > 128)
        return 0;
    unsigned __int128 c_bytes =
        (unsigned __int128)bits * (uint64_t)c->m * (uint64_t)c->n * (uint64_t)c->batch / 8;
    struct registry_entry ce;
    if (!registry_containing(REGISTRY_ADDR, c->c, &ce) || ce.addr != c->c ||
        ce.requested != c_bytes)
        return 0;
    if (c->k == 0)
        return 1;
    uint64_t a_ext = lin_operand(c, c->dt_a, c->transa, c->m, c->k, c->lda, c->stride_a);
    uint64_t b_ext = lin_operand(c, c->dt_b, c->transb, c->k, c->n, c->ldb, c->stride_b);
    uint64_t a = lin_alloc_of(c->a, a_ext), b = lin_alloc_of(c->b, b_ext);
    if (!a_ext || !b_ext || !a || !b || a == c->c || b == c->c)
        return 0;
    in[(*nin)++] = a;
    in[(*nin)++] = b;
    return 1;
}
