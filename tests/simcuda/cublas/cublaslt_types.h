/* cublaslt_types: what the simulated cuBLASLt keeps inside its semi-opaque descriptors.
 *
 * The real headers give each descriptor a fixed-size opaque body (cublasLtMatmulDescOpaque_t,
 * ...), which programs may allocate themselves and initialize with the *Init_internal calls, so
 * the state lives inside that body; the static assertions keep it within the real size. */
#ifndef SIMCUDA_CUBLASLT_TYPES_H
#define SIMCUDA_CUBLASLT_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include <cublasLt.h>

/* Marks a body this library initialized, so a garbage descriptor is refused, not trusted. */
#define LT_DESC_MAGIC 0x53494d4c54u /* "SIMLT" */

typedef struct lt_matmul_desc {
    uint64_t magic;
    int32_t compute_type;
    int32_t scale_type;
    int32_t pointer_mode;
    int32_t transa, transb, transc;
    int32_t fill_mode;
    uint32_t epilogue;
    int32_t bias_data_type; /* -1: the type of D */
    int32_t sm_count_target;
    int8_t fast_accum;
    const void *bias;
    int64_t bias_batch_stride;
} lt_matmul_desc;

typedef struct lt_layout {
    uint64_t magic;
    uint32_t type;
    int32_t order;
    uint64_t rows, cols;
    int64_t ld;
    int32_t batch_count;
    int64_t batch_offset;
    int64_t plane_offset;
} lt_layout;

typedef struct lt_preference {
    uint64_t magic;
    uint32_t search_mode;
    uint64_t max_workspace;
    uint32_t reduction_mask;
    uint32_t min_alignment[4];
    float max_waves;
    uint64_t impl_mask;
} lt_preference;

_Static_assert(sizeof(lt_matmul_desc) <= sizeof(cublasLtMatmulDescOpaque_t), "matmul desc");
_Static_assert(sizeof(lt_layout) <= sizeof(cublasLtMatrixLayoutOpaque_t), "layout");
_Static_assert(sizeof(lt_preference) <= sizeof(cublasLtMatmulPreferenceOpaque_t), "preference");

struct cublasLtContext {
    uint64_t magic;
};

/* One settable/gettable attribute: where it lives in the body and its exact size. */
typedef struct lt_attr {
    int attr;
    size_t offset;
    size_t size;
} lt_attr;

cublasStatus_t lt_attr_set(void *body, const lt_attr *table, size_t count, int attr,
                           const void *buf, size_t size);
cublasStatus_t lt_attr_get(const void *body, const lt_attr *table, size_t count, int attr,
                           void *buf, size_t size, size_t *written);

#endif
