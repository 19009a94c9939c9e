/* cublaslt_desc: handle, matmul descriptor, matrix layout and preference objects of cuBLASLt. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "blas_status.h"
#include "cublaslt_types.h"

#define LT_FIELD(attr, type, field)                                                                \
    {                                                                                              \
        attr, offsetof(type, field), sizeof(((type *)0)->field)                                    \
    }

static const lt_attr desc_attrs[] = {
    LT_FIELD(CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, lt_matmul_desc, compute_type),
    LT_FIELD(CUBLASLT_MATMUL_DESC_SCALE_TYPE, lt_matmul_desc, scale_type),
    LT_FIELD(CUBLASLT_MATMUL_DESC_POINTER_MODE, lt_matmul_desc, pointer_mode),
    LT_FIELD(CUBLASLT_MATMUL_DESC_TRANSA, lt_matmul_desc, transa),
    LT_FIELD(CUBLASLT_MATMUL_DESC_TRANSB, lt_matmul_desc, transb),
    LT_FIELD(CUBLASLT_MATMUL_DESC_TRANSC, lt_matmul_desc, transc),
    LT_FIELD(CUBLASLT_MATMUL_DESC_FILL_MODE, lt_matmul_desc, fill_mode),
    LT_FIELD(CUBLASLT_MATMUL_DESC_EPILOGUE, lt_matmul_desc, epilogue),
    LT_FIELD(CUBLASLT_MATMUL_DESC_BIAS_POINTER, lt_matmul_desc, bias),
    LT_FIELD(CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, lt_matmul_desc, bias_batch_stride),
    LT_FIELD(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, lt_matmul_desc, bias_data_type),
    LT_FIELD(CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, lt_matmul_desc, sm_count_target),
    LT_FIELD(CUBLASLT_MATMUL_DESC_FAST_ACCUM, lt_matmul_desc, fast_accum),
};

static const lt_attr layout_attrs[] = {
    LT_FIELD(CUBLASLT_MATRIX_LAYOUT_TYPE, lt_layout, type),
    LT_FIELD(CUBLASLT_MATRIX_LAYOUT_ORDER, lt_layout, order),
    LT_FIELD(CUBLASLT_MATRIX_LAYOUT_ROWS, lt_layout, rows),
    LT_FIELD(CUBLASLT_MATRIX_LAYOUT_COLS, lt_layout, cols),
    LT_FIELD(CUBLASLT_MATRIX_LAYOUT_LD, lt_layout, ld),
    LT_FIELD(CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, lt_layout, batch_count),
    LT_FIELD(CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, lt_layout, batch_offset),
    LT_FIELD(CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET, lt_layout, plane_offset),
};

static const lt_attr pref_attrs[] = {
    LT_FIELD(CUBLASLT_MATMUL_PREF_SEARCH_MODE, lt_preference, search_mode),
    LT_FIELD(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, lt_preference, max_workspace),
    LT_FIELD(CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, lt_preference, reduction_mask),
    LT_FIELD(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, lt_preference, min_alignment[0]),
    LT_FIELD(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, lt_preference, min_alignment[1]),
    LT_FIELD(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, lt_preference, min_alignment[2]),
    LT_FIELD(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, lt_preference, min_alignment[3]),
    LT_FIELD(CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT, lt_preference, max_waves),
    LT_FIELD(CUBLASLT_MATMUL_PREF_IMPL_MASK, lt_preference, impl_mask),
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static bool initialized(const void *body)
{
    return body && *(const uint64_t *)body == LT_DESC_MAGIC;
}

static const lt_attr *find_attr(const lt_attr *table, size_t count, int attr)
{
    for (size_t i = 0; i < count; i++)
        if (table[i].attr == attr)
            return &table[i];
    return NULL;
}

cublasStatus_t lt_attr_set(void *body, const lt_attr *table, size_t count, int attr,
                           const void *buf, size_t size)
{
    const lt_attr *a = find_attr(table, count, attr);
    if (!initialized(body))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!a || !buf || size != a->size)
        return CUBLAS_STATUS_INVALID_VALUE;
    memcpy((char *)body + a->offset, buf, size);
    return CUBLAS_STATUS_SUCCESS;
}

/* sizeInBytes == 0 asks only for the size; otherwise it must match the attribute exactly. */
cublasStatus_t lt_attr_get(const void *body, const lt_attr *table, size_t count, int attr,
                           void *buf, size_t size, size_t *written)
{
    const lt_attr *a = find_attr(table, count, attr);
    if (!initialized(body))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!a || (size == 0 && !written) || (size != 0 && (!buf || size != a->size)))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (written)
        *written = a->size;
    if (size != 0)
        memcpy(buf, (const char *)body + a->offset, size);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtCreate(cublasLtHandle_t *lightHandle)
{
    if (!lightHandle)
        return CUBLAS_STATUS_INVALID_VALUE;
    *lightHandle = calloc(1, sizeof **lightHandle);
    if (!*lightHandle)
        return CUBLAS_STATUS_ALLOC_FAILED;
    (*lightHandle)->magic = LT_DESC_MAGIC;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t lightHandle)
{
    if (!lightHandle)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    free(lightHandle);
    return CUBLAS_STATUS_SUCCESS;
}

const char *cublasLtGetStatusName(cublasStatus_t status)
{
    return blas_status_name(status);
}

const char *cublasLtGetStatusString(cublasStatus_t status)
{
    return blas_status_string(status);
}

cublasStatus_t cublasLtGetProperty(libraryPropertyType type, int *value)
{
    return blas_get_property(type, value);
}

size_t cublasLtGetVersion(void)
{
    return CUBLAS_VERSION;
}

size_t cublasLtGetCudartVersion(void)
{
    return 13000;
}

/* ---- matmul descriptor ---- */

cublasStatus_t cublasLtMatmulDescInit_internal(cublasLtMatmulDesc_t matmulDesc, size_t size,
                                               cublasComputeType_t computeType,
                                               cudaDataType_t scaleType)
{
    if (!matmulDesc || size < sizeof(lt_matmul_desc))
        return CUBLAS_STATUS_ALLOC_FAILED;
    memset(matmulDesc, 0, size);
    lt_matmul_desc *d = (lt_matmul_desc *)matmulDesc;
    *d = (lt_matmul_desc){.magic = LT_DESC_MAGIC,
                          .compute_type = computeType,
                          .scale_type = scaleType,
                          .pointer_mode = CUBLASLT_POINTER_MODE_HOST,
                          .transa = CUBLAS_OP_N,
                          .transb = CUBLAS_OP_N,
                          .transc = CUBLAS_OP_N,
                          .fill_mode = CUBLAS_FILL_MODE_FULL,
                          .epilogue = CUBLASLT_EPILOGUE_DEFAULT,
                          .bias_data_type = -1};
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *matmulDesc,
                                        cublasComputeType_t computeType, cudaDataType_t scaleType)
{
    if (!matmulDesc)
        return CUBLAS_STATUS_INVALID_VALUE;
    *matmulDesc = malloc(sizeof **matmulDesc);
    if (!*matmulDesc)
        return CUBLAS_STATUS_ALLOC_FAILED;
    return cublasLtMatmulDescInit_internal(*matmulDesc, sizeof **matmulDesc, computeType,
                                           scaleType);
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc)
{
    free(matmulDesc);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc,
                                              cublasLtMatmulDescAttributes_t attr, const void *buf,
                                              size_t sizeInBytes)
{
    return lt_attr_set(matmulDesc, desc_attrs, COUNT(desc_attrs), attr, buf, sizeInBytes);
}

cublasStatus_t cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t matmulDesc,
                                              cublasLtMatmulDescAttributes_t attr, void *buf,
                                              size_t sizeInBytes, size_t *sizeWritten)
{
    return lt_attr_get(matmulDesc, desc_attrs, COUNT(desc_attrs), attr, buf, sizeInBytes,
                       sizeWritten);
}

/* ---- matrix layout ---- */

cublasStatus_t cublasLtMatrixLayoutInit_internal(cublasLtMatrixLayout_t matLayout, size_t size,
                                                 cudaDataType type, uint64_t rows, uint64_t cols,
                                                 int64_t ld)
{
    if (!matLayout || size < sizeof(lt_layout))
        return CUBLAS_STATUS_ALLOC_FAILED;
    memset(matLayout, 0, size);
    *(lt_layout *)matLayout = (lt_layout){.magic = LT_DESC_MAGIC,
                                          .type = (uint32_t)type,
                                          .order = CUBLASLT_ORDER_COL,
                                          .rows = rows,
                                          .cols = cols,
                                          .ld = ld,
                                          .batch_count = 1};
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *matLayout, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld)
{
    if (!matLayout)
        return CUBLAS_STATUS_INVALID_VALUE;
    *matLayout = malloc(sizeof **matLayout);
    if (!*matLayout)
        return CUBLAS_STATUS_ALLOC_FAILED;
    return cublasLtMatrixLayoutInit_internal(*matLayout, sizeof **matLayout, type, rows, cols, ld);
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout)
{
    free(matLayout);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t matLayout,
                                                cublasLtMatrixLayoutAttribute_t attr,
                                                const void *buf, size_t sizeInBytes)
{
    return lt_attr_set(matLayout, layout_attrs, COUNT(layout_attrs), attr, buf, sizeInBytes);
}

cublasStatus_t cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t matLayout,
                                                cublasLtMatrixLayoutAttribute_t attr, void *buf,
                                                size_t sizeInBytes, size_t *sizeWritten)
{
    return lt_attr_get(matLayout, layout_attrs, COUNT(layout_attrs), attr, buf, sizeInBytes,
                       sizeWritten);
}

/* ---- preference ---- */

cublasStatus_t cublasLtMatmulPreferenceInit_internal(cublasLtMatmulPreference_t pref, size_t size)
{
    if (!pref || size < sizeof(lt_preference))
        return CUBLAS_STATUS_ALLOC_FAILED;
    memset(pref, 0, size);
    *(lt_preference *)pref = (lt_preference){.magic = LT_DESC_MAGIC,
                                             .search_mode = CUBLASLT_SEARCH_BEST_FIT,
                                             .reduction_mask = CUBLASLT_REDUCTION_SCHEME_MASK,
                                             .min_alignment = {256, 256, 256, 256},
                                             .impl_mask = UINT64_MAX};
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref)
{
    if (!pref)
        return CUBLAS_STATUS_INVALID_VALUE;
    *pref = malloc(sizeof **pref);
    if (!*pref)
        return CUBLAS_STATUS_ALLOC_FAILED;
    return cublasLtMatmulPreferenceInit_internal(*pref, sizeof **pref);
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref)
{
    free(pref);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void *buf, size_t sizeInBytes)
{
    return lt_attr_set(pref, pref_attrs, COUNT(pref_attrs), attr, buf, sizeInBytes);
}

cublasStatus_t cublasLtMatmulPreferenceGetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    void *buf, size_t sizeInBytes,
                                                    size_t *sizeWritten)
{
    return lt_attr_get(pref, pref_attrs, COUNT(pref_attrs), attr, buf, sizeInBytes, sizeWritten);
}
