/* intercept_cublas: cuBLAS GEMMs → access.h. Each hook describes its call (shapes, types,
 * operands), asks access_record to log it and make its operands resident, then runs the real
 * GEMM with this thread marked "inside cuBLAS", so a GEMM that libcublas routes through
 * cuBLASLt is not counted twice. Nothing but the recording is held across the real call: the
 * allocations cuBLAS makes inside it are tracked as usual.
 *
 * Batched GEMMs with pointer arrays (cublasGemmBatchedEx): the arrays live in device memory
 * and are recorded as read. Their operands are recorded too when the arrays can be read
 * safely: each array lies inside one tracked allocation, the stream is not being captured into
 * a graph, the batch has at most BLAS_ARRAY_READ_MAX members, and a copy ordered on the GEMM's
 * own stream (cuMemcpyDtoHAsync + cuStreamSynchronize through the real driver) succeeds — so
 * the pointers read are exactly those the GEMM will see, at the cost of one wait for the
 * stream. Otherwise only the arrays are recorded.
 *
 * Recompute (residency.h): after a plain GEMM (not a pointer-array batch) succeeds, the call
 * goes to lineage_rule (lineage.h states the rule), and when it qualifies to the residency
 * policy as its output's lineage (track_gemm_written). Only under MEMSHIM_ACCESS=all: a lineage
 * stays valid only while every copy, set and kernel that may write its inputs is seen. Operands
 * read from pointer arrays are exposed (never dropped). A handle's destroy or new workspace first
 * recomputes whatever it would replay. */
#include "intercept_cublas.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "access.h"
#include "arena.h"
#include "compat.h"
#include "gemm_range.h"
#include "lineage.h"
#include "log.h"
#include "ltdesc.h"
#include "real.h"
#include "registry.h"
#include "track.h"

/* Pointer-array batches whose operands are read (larger ones record the arrays only). */
#define BLAS_ARRAY_READ_MAX 512
/* Scratch areas for reading pointer arrays, shared by all threads (none free: arrays only). */
#define BLAS_SCRATCH_COUNT 4
/* Ranges one call may hand to access_record before per-allocation merging kicks in. */
#define BLAS_RANGE_BUDGET 120

/* The workspaces this thread retagged, by address (direct-mapped), with the registry's version
 * before each retag. PyTorch hands cuBLAS a workspace from its caching allocator for each GEMM,
 * so a thread goes round several. */
#define BLAS_WS_BITS 4
static MS_TLS struct blas_ws_note {
    uint64_t addr, version;
} blas_ws[1u << BLAS_WS_BITS];

static struct blas_ws_note *blas_ws_note(uint64_t addr)
{
    return &blas_ws[(addr * 0x9e3779b97f4a7c15ull) >> (64 - BLAS_WS_BITS)];
}

void intercept_cublas_workspace(const void *ptr)
{
    /* While the registry stands, the allocation holding a workspace is the one retagged then (a
     * retag that changed a category moved the version on), so only the lookup would be done
     * again. A freed workspace's address may come back as another allocation: the free moves
     * the version too. */
    uint64_t addr = (uint64_t)(uintptr_t)ptr, version = registry_version();
    struct blas_ws_note *n = blas_ws_note(addr);
    if (!ptr || (n->addr == addr && n->version == version && REGISTRY_VERSION_STEADY(version)))
        return;
    track_retag(addr, MST_CAT_WORKSPACE);
    *n = (struct blas_ws_note){addr, version};
}

/* One GEMM call as cuBLAS was asked for it. Strides are in elements; a pointer-array call
 * has a_arr/b_arr/c_arr instead of a/b/c. */
struct blas_gemm {
    const char *name;
    int fn; /* enum lineage_fn */
    int compute, algo;
    cublasHandle_t handle;
    int transa, transb;
    int64_t m, n, k, batch;
    int dt_a, dt_b, dt_c, scale_type;
    const void *alpha, *beta;
    int64_t lda, ldb, ldc;
    const void *a, *b, *c;
    int64_t stride_a, stride_b, stride_c;
    const void *const *a_arr;
    const void *const *b_arr;
    const void *const *c_arr;
    /* filled by blas_record */
    cudaStream_t stream;
    int host_beta_zero; /* beta read by value, and 0 */
};

struct blas_ranges {
    struct access_range *r;
    size_t n, cap;
};

static void blas_add(struct blas_ranges *rs, uint64_t addr, uint64_t one, int64_t stride_bytes,
                     uint64_t batch, uint8_t mode)
{
    if (rs->n < rs->cap && gemm_range_batched(&rs->r[rs->n], addr, one, stride_bytes, batch, mode))
        rs->n++;
}

/* ---- pointer arrays ---- */

struct blas_scratch {
    _Atomic int busy;
    uint64_t ptrs[3][BLAS_ARRAY_READ_MAX];
    struct access_range ranges[3 * BLAS_ARRAY_READ_MAX + 16];
};

static _Atomic(struct blas_scratch *) blas_scratch_pool[BLAS_SCRATCH_COUNT];

static struct blas_scratch *blas_scratch_get(void)
{
    for (int i = 0; i < BLAS_SCRATCH_COUNT; i++) {
        struct blas_scratch *s = atomic_load_explicit(&blas_scratch_pool[i], memory_order_acquire);
        if (!s) {
            struct blas_scratch *fresh = arena_map(sizeof *fresh);
            if (!fresh)
                return NULL;
            if (!atomic_compare_exchange_strong(&blas_scratch_pool[i], &s, fresh)) {
                arena_unmap(fresh, sizeof *fresh);
            } else {
                s = fresh;
            }
        }
        int expect = 0;
        if (atomic_compare_exchange_strong(&s->busy, &expect, 1))
            return s;
    }
    return NULL;
}

static void blas_scratch_put(struct blas_scratch *s)
{
    if (s)
        atomic_store_explicit(&s->busy, 0, memory_order_release);
}

/* Whether [addr, addr + bytes) lies inside one tracked allocation or mapping. */
static int blas_tracked(uint64_t addr, uint64_t bytes)
{
    struct registry_entry e;
    if (!registry_containing(REGISTRY_ADDR, addr, &e) &&
        !registry_containing(REGISTRY_MAP, addr, &e))
        return 0;
    return bytes <= e.size && addr - e.addr <= e.size - bytes;
}

/* Copy `batch` device pointers at arr into out, ordered after the work already queued on the
 * GEMM's stream. 1 on success (see the file comment for when it is attempted). */
static int blas_read_array(const void *const *arr, uint64_t batch, cudaStream_t stream,
                           uint64_t *out)
{
    uint64_t addr = (uint64_t)(uintptr_t)arr, bytes = batch * sizeof(void *);
    if (!arr || !real_driver_ready() || !REAL(cuMemcpyDtoHAsync_v2) || !REAL(cuStreamSynchronize) ||
        !blas_tracked(addr, bytes))
        return 0;
    CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
    if (REAL(cuStreamIsCapturing) &&
        (REAL(cuStreamIsCapturing)((CUstream)stream, &capture) != CUDA_SUCCESS ||
         capture != CU_STREAM_CAPTURE_STATUS_NONE))
        return 0;
    if (REAL(cuMemcpyDtoHAsync_v2)(out, (CUdeviceptr)addr, bytes, (CUstream)stream) != CUDA_SUCCESS)
        return 0;
    return REAL(cuStreamSynchronize)((CUstream)stream) == CUDA_SUCCESS;
}

static int blas_range_cmp(const void *pa, const void *pb)
{
    const struct access_range *a = pa, *b = pb;
    if (a->mode != b->mode)
        return a->mode < b->mode ? -1 : 1;
    return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/* Base of the tracked allocation holding addr, 0 when untracked. */
static uint64_t blas_owner(uint64_t addr)
{
    struct registry_entry e;
    if (registry_containing(REGISTRY_ADDR, addr, &e) || registry_containing(REGISTRY_MAP, addr, &e))
        return e.addr;
    return 0;
}

/* Operand ranges of a pointer-array batch: sorted, overlapping or adjacent ranges of one mode
 * joined (exact), and if that leaves more than `budget`, ranges of one mode inside one tracked
 * allocation joined into their hull (a superset, never crossing an allocation). */
static size_t blas_merge(struct access_range *r, size_t n, size_t budget)
{
    if (n < 2)
        return n;
    qsort(r, n, sizeof *r, blas_range_cmp);
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        struct access_range *last = out ? &r[out - 1] : NULL;
        if (last && last->mode == r[i].mode && r[i].addr <= last->addr + last->size) {
            uint64_t end = r[i].addr + r[i].size;
            if (end > last->addr + last->size)
                last->size = end - last->addr;
            continue;
        }
        r[out++] = r[i];
    }
    if (out <= budget)
        return out;
    n = out;
    out = 0;
    uint64_t owner = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t o = blas_owner(r[i].addr);
        struct access_range *last = out ? &r[out - 1] : NULL;
        if (last && last->mode == r[i].mode && o && o == owner) {
            last->size = r[i].addr + r[i].size - last->addr;
            continue;
        }
        owner = o;
        r[out++] = r[i];
    }
    return out;
}

/* ---- recording ---- */

static cudaStream_t blas_stream(cublasHandle_t handle)
{
    cublasStatus_t (*fn)(cublasHandle_t, cudaStream_t *) =
        REAL_BLAS(BLAS_LIB_CUBLAS, cublasGetStream_v2);
    cudaStream_t s = NULL;
    if (!fn || fn(handle, &s) != CUBLAS_STATUS_SUCCESS)
        s = NULL;
    return s;
}

static int blas_device_pointers(cublasHandle_t handle)
{
    cublasStatus_t (*fn)(cublasHandle_t, cublasPointerMode_t *) =
        REAL_BLAS(BLAS_LIB_CUBLAS, cublasGetPointerMode_v2);
    cublasPointerMode_t mode = CUBLAS_POINTER_MODE_HOST;
    if (fn && fn(handle, &mode) != CUBLAS_STATUS_SUCCESS)
        mode = CUBLAS_POINTER_MODE_HOST;
    return mode == CUBLAS_POINTER_MODE_DEVICE;
}

/* The workspace the handle was given (size 0: none). */
static struct ltdesc_handle blas_workspace(cublasHandle_t handle)
{
    union ltdesc_value v;
    if (!ltdesc_get((uint64_t)(uintptr_t)handle, LTDESC_HANDLE, &v))
        return (struct ltdesc_handle){0, 0};
    return v.handle;
}

/* The words a GEMM's records follow from (access_repeat_call): its arguments and what was read
 * with them, the handle's stream and workspace and whether C is read. 0 for pointer arrays,
 * whose operands are the arrays' contents. w holds BLAS_WORDS. */
#define BLAS_WORDS 23
_Static_assert(BLAS_WORDS < ACCESS_MEMO_WORDS, "the memo keeps them and a word of its own");

/* A GEMM's words and memo key. The thread's own, not a frame's: they hold its operands'
 * addresses, and what a hook leaves on the stack below the framework's frames is read back as
 * words of a later kernel's parameters (intercept_launch.c). One GEMM at a time per thread: it
 * is recorded only inside the thread's guard. */
static MS_TLS struct blas_key {
    uint64_t w[BLAS_WORDS];
    struct access_memo_key key;
    struct access_range ranges[8]; /* its operands' */
} blas_key_tls;

static size_t blas_words(const struct blas_gemm *g, int device_ptrs, int c_read,
                         const struct ltdesc_handle *ws, uint64_t *w)
{
    if (g->a_arr)
        return 0;
    w[0] = (uint64_t)(uintptr_t)g->name;
    w[1] = (uint64_t)(uintptr_t)g->stream;
    w[2] = (uint64_t)(uint32_t)g->transa | (uint64_t)(uint32_t)g->transb << 32;
    w[3] = (uint64_t)(uint32_t)g->dt_a | (uint64_t)(uint32_t)g->dt_b << 32;
    w[4] = (uint64_t)(uint32_t)g->dt_c | (uint64_t)(uint32_t)g->scale_type << 32;
    w[5] = (uint64_t)c_read | (uint64_t)device_ptrs << 1;
    w[6] = (uint64_t)g->m;
    w[7] = (uint64_t)g->n;
    w[8] = (uint64_t)g->k;
    w[9] = (uint64_t)g->batch;
    w[10] = (uint64_t)g->lda;
    w[11] = (uint64_t)g->ldb;
    w[12] = (uint64_t)g->ldc;
    w[13] = (uint64_t)(uintptr_t)g->a;
    w[14] = (uint64_t)(uintptr_t)g->b;
    w[15] = (uint64_t)(uintptr_t)g->c;
    w[16] = (uint64_t)g->stride_a;
    w[17] = (uint64_t)g->stride_b;
    w[18] = (uint64_t)g->stride_c;
    w[19] = ws->workspace;
    w[20] = ws->size;
    w[21] = device_ptrs ? (uint64_t)(uintptr_t)g->alpha : 0;
    w[22] = device_ptrs ? (uint64_t)(uintptr_t)g->beta : 0;
    return BLAS_WORDS;
}

/* Record one GEMM. 0: go ahead with the real call; -1: an operand could not be made resident. */
static int blas_record(struct blas_gemm *g)
{
    if (g->m < 0 || g->n < 0 || g->k < 0 || g->batch < 0)
        return 0; /* the real call refuses it; there is nothing it touches */
    cudaStream_t stream = blas_stream(g->handle);
    int device_ptrs = blas_device_pointers(g->handle);
    /* A device-side beta is not read: that would wait for the stream on every call. C is then
     * recorded as read, the safe side for liveness and for recompute (which needs beta = 0). */
    int c_read = device_ptrs || !gemm_range_scalar_is_zero(g->beta, g->scale_type);
    g->stream = stream;
    g->host_beta_zero = !c_read;
    struct ltdesc_handle ws = blas_workspace(g->handle);
    /* A call made before with the same words is a repeat: none of what follows is needed. */
    struct blas_key *bk = &blas_key_tls;
    if (access_repeat_call(&bk->key, bk->w, blas_words(g, device_ptrs, c_read, &ws, bk->w)))
        return 0;
    uint64_t batch = (uint64_t)g->batch;
    uint64_t ar, ac, br, bc;
    gemm_range_stored(g->transa, g->m, g->k, &ar, &ac);
    gemm_range_stored(g->transb, g->k, g->n, &br, &bc);
    uint64_t a_one = gemm_range_matrix_bytes(g->dt_a, ar, ac, (uint64_t)g->lda);
    uint64_t b_one = gemm_range_matrix_bytes(g->dt_b, br, bc, (uint64_t)g->ldb);
    uint64_t c_one =
        gemm_range_matrix_bytes(g->dt_c, (uint64_t)g->m, (uint64_t)g->n, (uint64_t)g->ldc);
    uint8_t c_mode = (uint8_t)(MST_ACCESS_WRITE | (c_read ? MST_ACCESS_READ : 0));

    struct blas_ranges rs = {bk->ranges, 0, MS_ARRAY_LEN(bk->ranges)};
    struct blas_scratch *scratch = NULL;

    if (!g->a_arr) {
        blas_add(&rs, (uint64_t)(uintptr_t)g->a, a_one,
                 gemm_range_batch_stride(g->dt_a, g->stride_a, g->batch), batch, MST_ACCESS_READ);
        blas_add(&rs, (uint64_t)(uintptr_t)g->b, b_one,
                 gemm_range_batch_stride(g->dt_b, g->stride_b, g->batch), batch, MST_ACCESS_READ);
        blas_add(&rs, (uint64_t)(uintptr_t)g->c, c_one,
                 gemm_range_batch_stride(g->dt_c, g->stride_c, g->batch), batch, c_mode);
    } else {
        const void *const *arrs[3] = {g->a_arr, g->b_arr, g->c_arr};
        uint64_t ones[3] = {a_one, b_one, c_one};
        uint8_t modes[3] = {MST_ACCESS_READ, MST_ACCESS_READ, c_mode};
        int read = batch > 0 && batch <= BLAS_ARRAY_READ_MAX && (scratch = blas_scratch_get());
        for (int i = 0; read && i < 3; i++)
            read = blas_read_array(arrs[i], batch, stream, scratch->ptrs[i]);
        for (int i = 0; read && track_remat() && i < 3; i++)
            track_expose(scratch->ptrs[i], batch);
        if (read) {
            rs = (struct blas_ranges){scratch->ranges, 0, MS_ARRAY_LEN(scratch->ranges)};
        }
        for (int i = 0; i < 3; i++)
            blas_add(&rs, (uint64_t)(uintptr_t)arrs[i], batch * sizeof(void *), 0, 1,
                     MST_ACCESS_READ);
        if (read) {
            size_t first = rs.n;
            for (int i = 0; i < 3; i++)
                for (uint64_t j = 0; j < batch; j++)
                    blas_add(&rs, scratch->ptrs[i][j], ones[i], 0, 1, modes[i]);
            rs.n = first + blas_merge(rs.r + first, rs.n - first, BLAS_RANGE_BUDGET - first - 4);
        }
    }
    if (device_ptrs) {
        uint64_t scalar = (gemm_range_dtype_bits(g->scale_type) + 7) / 8;
        blas_add(&rs, (uint64_t)(uintptr_t)g->alpha, scalar ? scalar : 1, 0, 1, MST_ACCESS_READ);
        blas_add(&rs, (uint64_t)(uintptr_t)g->beta, scalar ? scalar : 1, 0, 1, MST_ACCESS_READ);
    }
    if (ws.size)
        blas_add(&rs, ws.workspace, ws.size, 0, 1, MST_ACCESS_READ | MST_ACCESS_WRITE);

    struct access_op op = {
        .kind = MST_OP_GEMM,
        .dtype_a = gemm_range_dtype_byte(g->dt_a),
        .dtype_b = gemm_range_dtype_byte(g->dt_b),
        .dtype_c = gemm_range_dtype_byte(g->dt_c),
        .stream = (uint64_t)(uintptr_t)stream,
        .m = (uint64_t)g->m,
        .n = (uint64_t)g->n,
        .k = (uint64_t)g->k,
        .batch = batch,
        .flops = gemm_range_flops((uint64_t)g->m, (uint64_t)g->n, (uint64_t)g->k, batch),
        .name = g->name};
    int r = access_record_call(&bk->key, &op, rs.r, rs.n);
    blas_scratch_put(scratch);
    return r;
}

/* After the real GEMM succeeded: its lineage, when it can be replayed (see the file comment). */
static void blas_lineage(const struct blas_gemm *g)
{
    unsigned sbits = gemm_range_dtype_bits(g->scale_type);
    if (!track_remat() || access_level() != ACCESS_ALL || g->a_arr || !sbits || sbits > 128)
        return;
    uint64_t c = (uint64_t)(uintptr_t)g->c;
    struct lineage_call call = {.handle = (uint64_t)(uintptr_t)g->handle,
                                .stream = (uint64_t)(uintptr_t)g->stream,
                                .fn = g->fn,
                                .transa = g->transa,
                                .transb = g->transb,
                                .dt_a = g->dt_a,
                                .dt_b = g->dt_b,
                                .dt_c = g->dt_c,
                                .compute = g->compute,
                                .algo = g->algo,
                                .m = g->m,
                                .n = g->n,
                                .k = g->k,
                                .lda = g->lda,
                                .ldb = g->ldb,
                                .ldc = g->ldc,
                                .batch = g->batch,
                                .stride_a = g->stride_a,
                                .stride_b = g->stride_b,
                                .stride_c = g->stride_c,
                                .a = (uint64_t)(uintptr_t)g->a,
                                .b = (uint64_t)(uintptr_t)g->b,
                                .c = c};
    memcpy(call.alpha, g->alpha, (sbits + 7) / 8);
    memcpy(call.beta, g->beta, (sbits + 7) / 8);
    uint64_t in[LINEAGE_MAX_IN];
    unsigned nin = 0;
    if (!lineage_rule(&call, g->scale_type, g->host_beta_zero, in, &nin))
        return;
    cublasStatus_t (*get_math)(cublasHandle_t, cublasMath_t *) =
        REAL_BLAS(BLAS_LIB_CUBLAS, cublasGetMathMode);
    cublasMath_t math = CUBLAS_DEFAULT_MATH;
    if (get_math && get_math(g->handle, &math) == CUBLAS_STATUS_SUCCESS) {
        call.math_mode = (int)math;
        call.has_math_mode = 1;
    }
    union ltdesc_value ws = {0};
    if (!ltdesc_get((uint64_t)(uintptr_t)g->handle, LTDESC_HANDLE, &ws))
        ws.handle.size = 0;
    track_gemm_written(
        &call, in, nin,
        gemm_range_flops((uint64_t)g->m, (uint64_t)g->n, (uint64_t)g->k, (uint64_t)g->batch),
        ws.handle.workspace, ws.handle.size);
}

/* The common frame of every GEMM hook: pass through when access tracking is off, when no
 * record would be read (no trace, no spill policy: the workspace's category comes from
 * cublasSetWorkspace) or when cuBLAS calls itself; otherwise record (guarded), then run the
 * real call marked. */
#define BLAS_GEMM_HOOK(NAME, CALL, ...)                                                            \
    do {                                                                                           \
        __typeof__(&NAME) fn_ = REAL_BLAS(BLAS_LIB_CUBLAS, NAME);                                  \
        if (!fn_)                                                                                  \
            return CUBLAS_STATUS_NOT_INITIALIZED;                                                  \
        if (!access_recording() || guard_in_blas() || !track_guard_enter())                        \
            return fn_ CALL;                                                                       \
        struct blas_gemm g_ = {.name = #NAME, .fn = LINEAGE_FN_##NAME, __VA_ARGS__};               \
        int go_ = blas_record(&g_);                                                                \
        track_guard_leave();                                                                       \
        if (go_ != 0)                                                                              \
            return CUBLAS_STATUS_ALLOC_FAILED;                                                     \
        guard_blas_enter();                                                                        \
        cublasStatus_t r_ = fn_ CALL;                                                              \
        guard_blas_leave();                                                                        \
        access_done();                                                                             \
        if (r_ == CUBLAS_STATUS_SUCCESS)                                                           \
            blas_lineage(&g_);                                                                     \
        return r_;                                                                                 \
    } while (0)

#define BLAS_COMMON(T)                                                                             \
    .handle = handle, .transa = transa, .transb = transb, .m = m, .n = n, .k = k, .alpha = alpha,  \
    .beta = beta, .lda = lda, .ldb = ldb, .ldc = ldc, .dt_a = T, .dt_b = T, .dt_c = T,             \
    .scale_type = T

/* ---- typed GEMMs ---- */

#define BLAS_TYPED(NAME, INT, T, TYPE)                                                             \
    cublasStatus_t NAME(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, \
                        INT m, INT n, INT k, const T *alpha, const T *A, INT lda, const T *B,      \
                        INT ldb, const T *beta, T *C, INT ldc)                                     \
    {                                                                                              \
        BLAS_GEMM_HOOK(NAME,                                                                       \
                       (handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc),     \
                       BLAS_COMMON(TYPE), .batch = 1, .a = A, .b = B, .c = C);                     \
    }

BLAS_TYPED(cublasSgemm_v2, int, float, CUDA_R_32F)
BLAS_TYPED(cublasSgemm_v2_64, int64_t, float, CUDA_R_32F)
BLAS_TYPED(cublasDgemm_v2, int, double, CUDA_R_64F)
BLAS_TYPED(cublasDgemm_v2_64, int64_t, double, CUDA_R_64F)
BLAS_TYPED(cublasHgemm, int, blas_half, CUDA_R_16F)
BLAS_TYPED(cublasHgemm_64, int64_t, blas_half, CUDA_R_16F)

#define BLAS_EX_COMMON                                                                             \
    .handle = handle, .transa = transa, .transb = transb, .m = m, .n = n, .k = k, .alpha = alpha,  \
    .beta = beta, .lda = lda, .ldb = ldb, .ldc = ldc, .dt_a = Atype, .dt_b = Btype, .dt_c = Ctype, \
    .scale_type = gemm_range_scale_type(computeType, Ctype), .compute = computeType, .algo = algo

#define BLAS_EX(NAME, INT)                                                                         \
    cublasStatus_t NAME(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, \
                        INT m, INT n, INT k, const void *alpha, const void *A, cudaDataType Atype, \
                        INT lda, const void *B, cudaDataType Btype, INT ldb, const void *beta,     \
                        void *C, cudaDataType Ctype, INT ldc, cublasComputeType_t computeType,     \
                        cublasGemmAlgo_t algo)                                                     \
    {                                                                                              \
        BLAS_GEMM_HOOK(NAME,                                                                       \
                       (handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb,      \
                        beta, C, Ctype, ldc, computeType, algo),                                   \
                       BLAS_EX_COMMON, .batch = 1, .a = A, .b = B, .c = C);                        \
    }

BLAS_EX(cublasGemmEx, int)
BLAS_EX(cublasGemmEx_64, int64_t)

/* ---- strided batches ---- */

#define BLAS_STRIDED(NAME, INT)                                                                    \
    cublasStatus_t NAME(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, \
                        INT m, INT n, INT k, const float *alpha, const float *A, INT lda,          \
                        long long int strideA, const float *B, INT ldb, long long int strideB,     \
                        const float *beta, float *C, INT ldc, long long int strideC,               \
                        INT batchCount)                                                            \
    {                                                                                              \
        BLAS_GEMM_HOOK(NAME,                                                                       \
                       (handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB,  \
                        beta, C, ldc, strideC, batchCount),                                        \
                       BLAS_COMMON(CUDA_R_32F), .batch = batchCount, .a = A, .b = B, .c = C,       \
                       .stride_a = strideA, .stride_b = strideB, .stride_c = strideC);             \
    }

BLAS_STRIDED(cublasSgemmStridedBatched, int)
BLAS_STRIDED(cublasSgemmStridedBatched_64, int64_t)

#define BLAS_STRIDED_EX(NAME, INT)                                                                 \
    cublasStatus_t NAME(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, \
                        INT m, INT n, INT k, const void *alpha, const void *A, cudaDataType Atype, \
                        INT lda, long long int strideA, const void *B, cudaDataType Btype,         \
                        INT ldb, long long int strideB, const void *beta, void *C,                 \
                        cudaDataType Ctype, INT ldc, long long int strideC, INT batchCount,        \
                        cublasComputeType_t computeType, cublasGemmAlgo_t algo)                    \
    {                                                                                              \
        BLAS_GEMM_HOOK(NAME,                                                                       \
                       (handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype,  \
                        ldb, strideB, beta, C, Ctype, ldc, strideC, batchCount, computeType,       \
                        algo),                                                                     \
                       BLAS_EX_COMMON, .batch = batchCount, .a = A, .b = B, .c = C,                \
                       .stride_a = strideA, .stride_b = strideB, .stride_c = strideC);             \
    }

BLAS_STRIDED_EX(cublasGemmStridedBatchedEx, int)
BLAS_STRIDED_EX(cublasGemmStridedBatchedEx_64, int64_t)

/* ---- pointer-array batches ---- */

#define BLAS_BATCHED_EX(NAME, INT)                                                                 \
    cublasStatus_t NAME(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, \
                        INT m, INT n, INT k, const void *alpha, const void *const Aarray[],        \
                        cudaDataType Atype, INT lda, const void *const Barray[],                   \
                        cudaDataType Btype, INT ldb, const void *beta, void *const Carray[],       \
                        cudaDataType Ctype, INT ldc, INT batchCount,                               \
                        cublasComputeType_t computeType, cublasGemmAlgo_t algo)                    \
    {                                                                                              \
        BLAS_GEMM_HOOK(NAME,                                                                       \
                       (handle, transa, transb, m, n, k, alpha, Aarray, Atype, lda, Barray, Btype, \
                        ldb, beta, Carray, Ctype, ldc, batchCount, computeType, algo),             \
                       BLAS_EX_COMMON, .batch = batchCount, .a_arr = Aarray, .b_arr = Barray,      \
                       .c_arr = (const void *const *)Carray);                                      \
    }

BLAS_BATCHED_EX(cublasGemmBatchedEx, int)
BLAS_BATCHED_EX(cublasGemmBatchedEx_64, int64_t)

/* ---- workspace ---- */

cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void *workspace,
                                     size_t workspaceSizeInBytes)
{
    __typeof__(&cublasSetWorkspace_v2) fn = REAL_BLAS(BLAS_LIB_CUBLAS, cublasSetWorkspace_v2);
    if (!fn)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    /* A replay must see the workspace its GEMM saw: when it changes, what this handle would
     * replay is recomputed now, under the guard (a replay's own allocations are cuBLAS's).
     * Frameworks set the same workspace again before every GEMM (PyTorch does): no change. */
    union ltdesc_value old;
    if (track_remat() && handle && !guard_in_blas() &&
        !(ltdesc_get((uint64_t)(uintptr_t)handle, LTDESC_HANDLE, &old) &&
          old.handle.workspace == (uint64_t)(uintptr_t)workspace &&
          old.handle.size == (workspace ? workspaceSizeInBytes : 0)) &&
        track_guard_enter()) {
        track_blas_handle((uint64_t)(uintptr_t)handle);
        track_guard_leave();
    }
    cublasStatus_t r = fn(handle, workspace, workspaceSizeInBytes);
    if (r != CUBLAS_STATUS_SUCCESS || access_level() == ACCESS_OFF || guard_in_blas() ||
        !track_guard_enter())
        return r;
    union ltdesc_value v; /* the handle's member only: the rest is neither stored nor read */
    v.handle = (struct ltdesc_handle){(uint64_t)(uintptr_t)workspace,
                                      workspace ? workspaceSizeInBytes : 0};
    if (ltdesc_put((uint64_t)(uintptr_t)handle, LTDESC_HANDLE, &v) != 0)
        log_debug("cublasSetWorkspace_v2: no room to remember the handle's workspace");
    intercept_cublas_workspace(workspace);
    track_guard_leave();
    return r;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle)
{
    __typeof__(&cublasDestroy_v2) fn = REAL_BLAS(BLAS_LIB_CUBLAS, cublasDestroy_v2);
    if (!fn)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    /* Before the real call: the address may be reused by the next cublasCreate, and a replay
     * needs the handle. */
    if (track_remat() && handle && !guard_in_blas() && track_guard_enter()) {
        track_blas_handle((uint64_t)(uintptr_t)handle);
        track_guard_leave();
    }
    if (access_level() != ACCESS_OFF && handle)
        ltdesc_drop((uint64_t)(uintptr_t)handle);
    return fn(handle);
}
