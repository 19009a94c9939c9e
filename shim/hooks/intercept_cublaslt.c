/* intercept_cublaslt: cublasLtMatmul → access.h, with shapes from ltdesc's side table.
 *
 * The descriptor hooks only keep the table current (and pass everything through while
 * libcublas itself is inside one of our GEMM hooks). A descriptor the table does not know
 * (made before we were loaded, or while the table was full) is rebuilt once from the
 * library's GetAttribute functions. */
#include "intercept_cublaslt.h"

#include "access.h"
#include "gemm_range.h"
#include "intercept_cublas.h"
#include "log.h"
#include "ltdesc.h"
#include "track.h"

/* Epilogue bits (cublasLtEpilogue_t is a bit set: RELU 2, BIAS 4, DRELU 8, BGRAD 16, GELU 32,
 * DGELU 64, AUX 128, BGRADA 256, BGRADB 512). */
#define LT_EPI_RELU   2u
#define LT_EPI_BIAS   4u
#define LT_EPI_DRELU  8u
#define LT_EPI_BGRAD  16u
#define LT_EPI_DGELU  64u
#define LT_EPI_AUX    128u
#define LT_EPI_BGRADA 256u
#define LT_EPI_BGRADB 512u

/* Ranges of one matmul: A, B, C, D, alpha, beta, bias, aux, five scale/amax pointers, workspace. */
#define LT_MAX_RANGES 16

static int lt_tracking(void)
{
    return access_level() != ACCESS_OFF && !guard_in_blas();
}

/* ---- the side table, with a rebuild for descriptors it missed ---- */

static int lt_matmul(cublasLtMatmulDesc_t desc, struct ltdesc_matmul *out)
{
    union ltdesc_value v;
    if (!desc)
        return 0;
    if (ltdesc_get((uint64_t)(uintptr_t)desc, LTDESC_MATMUL, &v)) {
        *out = v.matmul;
        return 1;
    }
    __typeof__(&cublasLtMatmulDescGetAttribute) get =
        REAL_BLAS(BLAS_LIB_LT, cublasLtMatmulDescGetAttribute);
    if (!get)
        return 0;
    ltdesc_matmul_init(&v.matmul, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    for (size_t i = 0; i < ltdesc_matmul_nattrs; i++) {
        uint64_t buf = 0;
        size_t written = 0;
        cublasStatus_t st = get(desc, (cublasLtMatmulDescAttributes_t)ltdesc_matmul_attrs[i], &buf,
                                sizeof buf, &written);
        if (st == CUBLAS_STATUS_SUCCESS)
            ltdesc_matmul_set(&v.matmul, ltdesc_matmul_attrs[i], &buf, written);
        else if (i < 2)
            return 0; /* not a descriptor the library knows either */
    }
    ltdesc_put((uint64_t)(uintptr_t)desc, LTDESC_MATMUL, &v);
    *out = v.matmul;
    return 1;
}

static int lt_layout(cublasLtMatrixLayout_t layout, struct ltdesc_layout *out)
{
    union ltdesc_value v;
    if (!layout)
        return 0;
    if (ltdesc_get((uint64_t)(uintptr_t)layout, LTDESC_LAYOUT, &v)) {
        *out = v.layout;
        return 1;
    }
    __typeof__(&cublasLtMatrixLayoutGetAttribute) get =
        REAL_BLAS(BLAS_LIB_LT, cublasLtMatrixLayoutGetAttribute);
    if (!get)
        return 0;
    ltdesc_layout_init(&v.layout, CUDA_R_32F, 0, 0, 0);
    for (size_t i = 0; i < ltdesc_layout_nattrs; i++) {
        uint64_t buf = 0;
        size_t written = 0;
        cublasStatus_t st = get(layout, (cublasLtMatrixLayoutAttribute_t)ltdesc_layout_attrs[i],
                                &buf, sizeof buf, &written);
        if (st == CUBLAS_STATUS_SUCCESS)
            ltdesc_layout_set(&v.layout, ltdesc_layout_attrs[i], &buf, written);
        else if (i < 1)
            return 0;
    }
    ltdesc_put((uint64_t)(uintptr_t)layout, LTDESC_LAYOUT, &v);
    *out = v.layout;
    return 1;
}

/* ---- extents ---- */

/* Bytes of one matrix of a layout. Column- and row-major are exact; the tiled orders (COL32
 * and friends, int8 tensor-core layouts) are taken as ld elements per 32 columns. */
static uint64_t lt_matrix_bytes(const struct ltdesc_layout *l)
{
    uint64_t ld = l->ld > 0 ? (uint64_t)l->ld : 0;
    switch (l->order) {
    case CUBLASLT_ORDER_COL:
        return gemm_range_matrix_bytes(l->type, l->rows, l->cols, ld);
    case CUBLASLT_ORDER_ROW:
        return gemm_range_matrix_bytes(l->type, l->cols, l->rows, ld);
    default:
        return gemm_range_matrix_bytes(l->type, ld, (l->cols + 31) / 32, ld);
    }
}

static int64_t lt_elems_to_bytes(int dtype, int64_t elems)
{
    return (int64_t)(((__int128)elems * gemm_range_dtype_bits(dtype)) / 8);
}

struct lt_ranges {
    struct access_range r[LT_MAX_RANGES];
    size_t n;
};

static void lt_add(struct lt_ranges *rs, const void *p, uint64_t one, int64_t stride,
                   uint64_t batch, uint8_t mode)
{
    if (rs->n < LT_MAX_RANGES &&
        gemm_range_batched(&rs->r[rs->n], (uint64_t)(uintptr_t)p, one, stride, batch, mode))
        rs->n++;
}

static void lt_add_layout(struct lt_ranges *rs, const void *p, const struct ltdesc_layout *l,
                          uint8_t mode)
{
    uint64_t batch = l->batch_count > 0 ? (uint64_t)l->batch_count : 1;
    lt_add(rs, p, lt_matrix_bytes(l),
           gemm_range_batch_stride(l->type, l->batch_offset, (int64_t)batch), batch, mode);
}

/* Bias, bias gradient and aux buffers of the epilogue. */
static void lt_add_epilogue(struct lt_ranges *rs, const struct ltdesc_matmul *d,
                            const struct ltdesc_layout *dl, uint64_t m, uint64_t n, uint64_t batch)
{
    uint32_t e = d->epilogue;
    int bias_type = d->bias_type >= 0 ? d->bias_type : dl->type;
    int64_t bias_stride = gemm_range_batch_stride(bias_type, d->bias_batch_stride, (int64_t)batch);
    if (e & (LT_EPI_BGRAD | LT_EPI_BGRADA | LT_EPI_BGRADB)) {
        /* bias gradient: written, one element per row of D (per column for BGRADB) */
        uint64_t len = (e & LT_EPI_BGRADB) ? n : m;
        lt_add(rs, (const void *)(uintptr_t)d->bias,
               (len * gemm_range_dtype_bits(bias_type) + 7) / 8, bias_stride, batch,
               MST_ACCESS_WRITE);
    } else if (e & LT_EPI_BIAS) {
        lt_add(rs, (const void *)(uintptr_t)d->bias, (m * gemm_range_dtype_bits(bias_type) + 7) / 8,
               bias_stride, batch, MST_ACCESS_READ);
    }
    if ((e & LT_EPI_AUX) && d->aux) {
        /* Forward epilogues write the aux matrix for backward; DRELU/DGELU read it. A ReLU
         * mask is one bit per element with ld counted in elements. */
        int backward = (e & (LT_EPI_DRELU | LT_EPI_DGELU)) != 0;
        int relu = (e & (LT_EPI_RELU | LT_EPI_DRELU)) != 0;
        int aux_type = d->aux_type >= 0 ? d->aux_type : dl->type;
        uint64_t ld = d->aux_ld > 0 ? (uint64_t)d->aux_ld : m;
        uint64_t one, stride;
        if (relu) {
            one = n && m ? ((ld * (n - 1) + m) + 7) / 8 : 0;
            stride = (uint64_t)d->aux_batch_stride / 8;
        } else {
            one = gemm_range_matrix_bytes(aux_type, m, n, ld);
            stride = (uint64_t)lt_elems_to_bytes(aux_type, d->aux_batch_stride);
        }
        lt_add(rs, (const void *)(uintptr_t)d->aux, one, (int64_t)stride, batch,
               backward ? MST_ACCESS_READ : MST_ACCESS_WRITE);
    }
}

static int lt_record(cublasLtMatmulDesc_t desc, const void *alpha, const void *A,
                     cublasLtMatrixLayout_t Adesc, const void *B, cublasLtMatrixLayout_t Bdesc,
                     const void *beta, const void *C, cublasLtMatrixLayout_t Cdesc, void *D,
                     cublasLtMatrixLayout_t Ddesc, void *workspace, size_t workspace_size,
                     cudaStream_t stream)
{
    struct ltdesc_matmul d;
    struct ltdesc_layout a, b, c, dl;
    if (!lt_matmul(desc, &d) || !lt_layout(Adesc, &a) || !lt_layout(Bdesc, &b) ||
        !lt_layout(Cdesc, &c) || !lt_layout(Ddesc, &dl))
        return 0; /* a descriptor the library will refuse: nothing runs */
    uint64_t m = dl.rows, n = dl.cols, k = d.transa == CUBLAS_OP_N ? a.cols : a.rows;
    uint64_t batch = dl.batch_count > 0 ? (uint64_t)dl.batch_count : 1;

    /* Beta: read from the host when the pointer mode says it is there; a device-side beta is
     * never read (it would wait for the stream), so C counts as read. */
    int host_beta = d.pointer_mode == CUBLASLT_POINTER_MODE_HOST ||
                    d.pointer_mode == CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST;
    int c_read = d.pointer_mode == CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_ZERO ? 0
                 : host_beta ? !gemm_range_scalar_is_zero(beta, d.scale_type)
                             : 1;

    struct lt_ranges rs = {.n = 0};
    lt_add_layout(&rs, A, &a, MST_ACCESS_READ);
    lt_add_layout(&rs, B, &b, MST_ACCESS_READ);
    if (c_read && C)
        lt_add_layout(&rs, C, &c, MST_ACCESS_READ);
    lt_add_layout(&rs, D, &dl, MST_ACCESS_WRITE);
    uint64_t scalar = (gemm_range_dtype_bits(d.scale_type) + 7) / 8;
    if (!host_beta || d.pointer_mode == CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST) {
        /* alpha on the device: one scalar, or one per row of D for the vector modes */
        int vector = d.pointer_mode >= CUBLASLT_POINTER_MODE_DEVICE_VECTOR;
        lt_add(&rs, alpha, vector ? m * scalar : scalar, 0, 1, MST_ACCESS_READ);
        if (d.pointer_mode == CUBLASLT_POINTER_MODE_DEVICE ||
            d.pointer_mode == CUBLASLT_POINTER_MODE_DEVICE_VECTOR)
            lt_add(&rs, beta, vector ? m * scalar : scalar, 0, 1, MST_ACCESS_READ);
    }
    lt_add_epilogue(&rs, &d, &dl, m, n, batch);
    /* Tensor-wide scaling factors are one float each (block scaling modes are not modelled). */
    const uint64_t scales[4] = {d.scale_a, d.scale_b, d.scale_c, d.scale_d};
    for (int i = 0; i < 4; i++)
        lt_add(&rs, (const void *)(uintptr_t)scales[i], sizeof(float), 0, 1, MST_ACCESS_READ);
    lt_add(&rs, (const void *)(uintptr_t)d.amax_d, sizeof(float), 0, 1, MST_ACCESS_WRITE);
    if (workspace && workspace_size) {
        lt_add(&rs, workspace, workspace_size, 0, 1, MST_ACCESS_READ | MST_ACCESS_WRITE);
        intercept_cublas_workspace(workspace);
    }

    struct access_op op = {.kind = MST_OP_GEMM,
                           .dtype_a = gemm_range_dtype_byte(a.type),
                           .dtype_b = gemm_range_dtype_byte(b.type),
                           .dtype_c = gemm_range_dtype_byte(dl.type),
                           .stream = (uint64_t)(uintptr_t)stream,
                           .m = m,
                           .n = n,
                           .k = k,
                           .batch = batch,
                           .flops = gemm_range_flops(m, n, k, batch),
                           .name = "cublasLtMatmul"};
    return access_record(&op, rs.r, rs.n);
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc,
                              const void *alpha, const void *A, cublasLtMatrixLayout_t Adesc,
                              const void *B, cublasLtMatrixLayout_t Bdesc, const void *beta,
                              const void *C, cublasLtMatrixLayout_t Cdesc, void *D,
                              cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t *algo,
                              void *workspace, size_t workspaceSizeInBytes, cudaStream_t stream)
{
    __typeof__(&cublasLtMatmul) fn = REAL_BLAS(BLAS_LIB_LT, cublasLtMatmul);
    if (!fn)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!lt_tracking() || !track_guard_enter())
        return fn(lightHandle, computeDesc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc,
                  algo, workspace, workspaceSizeInBytes, stream);
    int go = lt_record(computeDesc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, workspace,
                       workspaceSizeInBytes, stream);
    track_guard_leave();
    if (go != 0)
        return CUBLAS_STATUS_ALLOC_FAILED;
    guard_blas_enter();
    cublasStatus_t r = fn(lightHandle, computeDesc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D,
                          Ddesc, algo, workspace, workspaceSizeInBytes, stream);
    guard_blas_leave();
    access_done();
    return r;
}

/* ---- matmul descriptors ---- */

static void lt_put_matmul(cublasLtMatmulDesc_t desc, cublasComputeType_t compute,
                          cudaDataType_t scale)
{
    union ltdesc_value v;
    ltdesc_matmul_init(&v.matmul, compute, scale);
    if (ltdesc_put((uint64_t)(uintptr_t)desc, LTDESC_MATMUL, &v) != 0)
        log_debug("cuBLASLt descriptor table full; rebuilding descriptors on use");
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *matmulDesc,
                                        cublasComputeType_t computeType, cudaDataType_t scaleType)
{
    __typeof__(&cublasLtMatmulDescCreate) fn = REAL_BLAS(BLAS_LIB_LT, cublasLtMatmulDescCreate);
    if (!fn)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    cublasStatus_t r = fn(matmulDesc, computeType, scaleType);
    if (r == CUBLAS_STATUS_SUCCESS && matmulDesc && lt_tracking())
        lt_put_matmul(*matmulDesc, computeType, scaleType);
    return r;
}

cublasStatus_t cublasLtMatmulDescInit_internal(cublasLtMatmulDesc_t matmulDesc, size_t size,
                                               cublasComputeType_t computeType,
                                               cudaDataType_t scaleType)
{
    __typeof__(&cublasLtMatmulDescInit_internal) fn =
        REAL_BLAS(BLAS_LIB_LT, cublasLtMatmulDescInit_internal);
    if (!fn)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    cublasStatus_t r = fn(matmulDesc, size, computeType, scaleType);
    if (r == CUBLAS_STATUS_SUCCESS && lt_tracking())
        lt_put_matmul(matmulDesc, computeType, scaleType);
    return r;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc,
                                              cublasLtMatmulDescAttributes_t attr, const void *buf,
                                              size_t sizeInBytes)
{
    __typeof__(&cublasLtMatmulDescSetAttribute) fn =
        REAL_BLAS(BLAS_LIB_LT, cublasLtMatmulDescSetAttribute);
    if (!fn)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    cublasStatus_t r = fn(matmulDesc, attr, buf, sizeInBytes);
    if (r != CUBLAS_STATUS_SUCCESS || !lt_tracking())
        return r;
    union ltdesc_value *at = ltdesc_at((uint64_t)(uintptr_t)matmulDesc, LTDESC_MATMUL);
    struct ltdesc_matmul rebuilt;
    if (at)
        ltdesc_matmul_set(&at->matmul, (int)attr, buf, sizeInBytes);
    else
        lt_matmul(matmulDesc, &rebuilt); /* the rebuild reads the new value too */
    return r;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc)
{
    __typeof__(&cublasLtMatmulDescDestroy) fn = REAL_BLAS(BLAS_LIB_LT, cublasLtMatmulDescDestroy);
    if (!fn)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (matmulDesc && lt_tracking())
        ltdesc_drop((uint64_t)(uintptr_t)matmulDesc);
    return fn(matmulDesc);
}

/* ---- matrix layouts ---- */

static void lt_put_layout(cublasLtMatrixLayout_t layout, cudaDataType type, uint64_t rows,
                          uint64_t cols, int64_t ld)
{
    union ltdesc_value v;
    ltdesc_layout_init(&v.layout, type, rows, cols, ld);
    if (ltdesc_put((uint64_t)(uintptr_t)layout, LTDESC_LAYOUT, &v) != 0)
        log_debug("cuBLASLt descriptor table full; rebuilding layouts on use");
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *matLayout, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld)
{
    __typeof__(&cublasLtMatrixLayoutCreate) fn = REAL_BLAS(BLAS_LIB_LT, cublasLtMatrixLayoutCreate);
    if (!fn)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    cublasStatus_t r = fn(matLayout, type, rows, cols, ld);
    if (r == CUBLAS_STATUS_SUCCESS && matLayout && lt_tracking())
        lt_put_layout(*matLayout, type, rows, cols, ld);
    return r;
}

cublasStatus_t cublasLtMatrixLayoutInit_internal(cublasLtMatrixLayout_t matLayout, size_t size,
                                                 cudaDataType type, uint64_t rows, uint64_t cols,
                                                 int64_t ld)
{
    __typeof__(&cublasLtMatrixLayoutInit_internal) fn =
        REAL_BLAS(BLAS_LIB_LT, cublasLtMatrixLayoutInit_internal);
    if (!fn)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    cublasStatus_t r = fn(matLayout, size, type, rows, cols, ld);
    if (r == CUBLAS_STATUS_SUCCESS && lt_tracking())
        lt_put_layout(matLayout, type, rows, cols, ld);
    return r;
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t matLayout,
                                                cublasLtMatrixLayoutAttribute_t attr,
                                                const void *buf, size_t sizeInBytes)
{
    __typeof__(&cublasLtMatrixLayoutSetAttribute) fn =
        REAL_BLAS(BLAS_LIB_LT, cublasLtMatrixLayoutSetAttribute);
    if (!fn)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    cublasStatus_t r = fn(matLayout, attr, buf, sizeInBytes);
    if (r != CUBLAS_STATUS_SUCCESS || !lt_tracking())
        return r;
    union ltdesc_value *at = ltdesc_at((uint64_t)(uintptr_t)matLayout, LTDESC_LAYOUT);
    struct ltdesc_layout rebuilt;
    if (at)
        ltdesc_layout_set(&at->layout, (int)attr, buf, sizeInBytes);
    else
        lt_layout(matLayout, &rebuilt);
    return r;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout)
{
    __typeof__(&cublasLtMatrixLayoutDestroy) fn =
        REAL_BLAS(BLAS_LIB_LT, cublasLtMatrixLayoutDestroy);
    if (!fn)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (matLayout && lt_tracking())
        ltdesc_drop((uint64_t)(uintptr_t)matLayout);
    return fn(matLayout);
}
