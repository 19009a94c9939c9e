/* ltdesc: the lock-free side table of cuBLAS objects; see ltdesc.h. */
#include "ltdesc.h"

#include <cublasLt.h>
#include <stdatomic.h>
#include <string.h>

#include "arena.h"
#include "compat.h"

#define LTDESC_SLOTS 4096u /* power of two */
#define LTDESC_PROBE 32u
#define LTDESC_EMPTY 0u
#define LTDESC_TOMB  1u /* no object lives at address 1 */

struct ltdesc_slot {
    _Atomic uint64_t key;
    _Atomic uint32_t kind;
    uint32_t reserved;
    union ltdesc_value v;
};

static _Atomic(struct ltdesc_slot *) ltdesc_table;

static struct ltdesc_slot *ltdesc_slots(int create)
{
    struct ltdesc_slot *t = atomic_load_explicit(&ltdesc_table, memory_order_acquire);
    if (t || !create)
        return t;
    struct ltdesc_slot *fresh = arena_map(LTDESC_SLOTS * sizeof *fresh);
    if (!fresh)
        return NULL;
    if (!atomic_compare_exchange_strong(&ltdesc_table, &t, fresh)) {
        arena_unmap(fresh, LTDESC_SLOTS * sizeof *fresh);
        return t;
    }
    return fresh;
}

static uint32_t ltdesc_home(uint64_t key)
{
    return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 40) & (LTDESC_SLOTS - 1);
}

static struct ltdesc_slot *ltdesc_find(struct ltdesc_slot *t, uint64_t key)
{
    uint32_t h = ltdesc_home(key);
    for (uint32_t p = 0; p < LTDESC_PROBE; p++) {
        struct ltdesc_slot *s = &t[(h + p) & (LTDESC_SLOTS - 1)];
        uint64_t k = atomic_load_explicit(&s->key, memory_order_acquire);
        if (k == key)
            return s;
        if (k == LTDESC_EMPTY)
            return NULL;
    }
    return NULL;
}

/* Copy the member of union ltdesc_value a kind uses: a handle's is an eighth of the union, and
 * one is written and read for every GEMM. */
static void ltdesc_copy(union ltdesc_value *to, const union ltdesc_value *from,
                        enum ltdesc_kind kind)
{
    switch (kind) {
    case LTDESC_HANDLE:
        to->handle = from->handle;
        break;
    case LTDESC_LAYOUT:
        to->layout = from->layout;
        break;
    default:
        *to = *from;
        break;
    }
}

int ltdesc_put(uint64_t key, enum ltdesc_kind kind, const union ltdesc_value *v)
{
    struct ltdesc_slot *t = ltdesc_slots(1);
    if (!t || key <= LTDESC_TOMB)
        return -1;
    for (int attempt = 0; attempt < 4; attempt++) {
        struct ltdesc_slot *s = ltdesc_find(t, key), *free_slot = NULL;
        uint64_t expect = 0;
        if (!s) {
            uint32_t h = ltdesc_home(key);
            for (uint32_t p = 0; p < LTDESC_PROBE && !free_slot; p++) {
                struct ltdesc_slot *c = &t[(h + p) & (LTDESC_SLOTS - 1)];
                expect = atomic_load_explicit(&c->key, memory_order_acquire);
                if (expect == LTDESC_EMPTY || expect == LTDESC_TOMB)
                    free_slot = c;
            }
            if (!free_slot)
                return -1;
            /* Another thread may claim it first: look again from the start. */
            if (!atomic_compare_exchange_strong(&free_slot->key, &expect, key))
                continue;
            s = free_slot;
        }
        ltdesc_copy(&s->v, v, kind);
        atomic_store_explicit(&s->kind, (uint32_t)kind, memory_order_release);
        return 0;
    }
    return -1;
}

/* The slot of `key`, or NULL: no table yet, or not there. */
static struct ltdesc_slot *ltdesc_lookup(uint64_t key)
{
    struct ltdesc_slot *t = ltdesc_slots(0);
    return t && key > LTDESC_TOMB ? ltdesc_find(t, key) : NULL;
}

/* The slot of `key` when it holds an object of `kind`, or NULL. */
static struct ltdesc_slot *ltdesc_holding(uint64_t key, enum ltdesc_kind kind)
{
    struct ltdesc_slot *s = ltdesc_lookup(key);
    return s && atomic_load_explicit(&s->kind, memory_order_acquire) == (uint32_t)kind ? s : NULL;
}

int ltdesc_get(uint64_t key, enum ltdesc_kind kind, union ltdesc_value *out)
{
    struct ltdesc_slot *s = ltdesc_holding(key, kind);
    if (!s)
        return 0;
    ltdesc_copy(out, &s->v, kind);
    /* Dropped and reused meanwhile: only a program using a destroyed object gets here. */
    return atomic_load_explicit(&s->key, memory_order_acquire) == key;
}

union ltdesc_value *ltdesc_at(uint64_t key, enum ltdesc_kind kind)
{
    struct ltdesc_slot *s = ltdesc_holding(key, kind);
    return s ? &s->v : NULL;
}

void ltdesc_drop(uint64_t key)
{
    struct ltdesc_slot *s = ltdesc_lookup(key);
    if (s) {
        atomic_store_explicit(&s->kind, 0, memory_order_relaxed);
        atomic_store_explicit(&s->key, LTDESC_TOMB, memory_order_release);
    }
}

void ltdesc_reset(void)
{
    struct ltdesc_slot *t = ltdesc_slots(0);
    if (t)
        memset(t, 0, LTDESC_SLOTS * sizeof *t);
}

/* ---- descriptor contents ---- */

void ltdesc_matmul_init(struct ltdesc_matmul *d, int32_t compute_type, int32_t scale_type)
{
    *d = (struct ltdesc_matmul){.compute_type = compute_type,
                                .scale_type = scale_type,
                                .pointer_mode = CUBLASLT_POINTER_MODE_HOST,
                                .transa = CUBLAS_OP_N,
                                .transb = CUBLAS_OP_N,
                                .epilogue = CUBLASLT_EPILOGUE_DEFAULT,
                                .bias_type = -1,
                                .aux_type = -1};
}

void ltdesc_layout_init(struct ltdesc_layout *l, int32_t type, uint64_t rows, uint64_t cols,
                        int64_t ld)
{
    *l = (struct ltdesc_layout){.type = type,
                                .order = CUBLASLT_ORDER_COL,
                                .rows = rows,
                                .cols = cols,
                                .ld = ld,
                                .batch_count = 1};
}

/* An attribute value of exactly `want` bytes, else the field is left as it was (the real call
 * refuses a wrong size). */
static int ltdesc_read(const void *buf, size_t size, size_t want, void *field)
{
    if (!buf || size != want)
        return 0;
    memcpy(field, buf, want);
    return 1;
}

#define LTDESC_SET(field) ltdesc_read(buf, size, sizeof(field), &(field))

void ltdesc_matmul_set(struct ltdesc_matmul *d, int attr, const void *buf, size_t size)
{
    switch (attr) {
    case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE:
        LTDESC_SET(d->compute_type);
        break;
    case CUBLASLT_MATMUL_DESC_SCALE_TYPE:
        LTDESC_SET(d->scale_type);
        break;
    case CUBLASLT_MATMUL_DESC_POINTER_MODE:
        LTDESC_SET(d->pointer_mode);
        break;
    case CUBLASLT_MATMUL_DESC_TRANSA:
        LTDESC_SET(d->transa);
        break;
    case CUBLASLT_MATMUL_DESC_TRANSB:
        LTDESC_SET(d->transb);
        break;
    case CUBLASLT_MATMUL_DESC_EPILOGUE:
        LTDESC_SET(d->epilogue);
        break;
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
        LTDESC_SET(d->bias);
        break;
    case CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE:
        LTDESC_SET(d->bias_batch_stride);
        break;
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE:
        LTDESC_SET(d->bias_type);
        break;
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER:
        LTDESC_SET(d->aux);
        break;
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD:
        LTDESC_SET(d->aux_ld);
        break;
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE:
        LTDESC_SET(d->aux_batch_stride);
        break;
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE:
        LTDESC_SET(d->aux_type);
        break;
    case CUBLASLT_MATMUL_DESC_A_SCALE_POINTER:
        LTDESC_SET(d->scale_a);
        break;
    case CUBLASLT_MATMUL_DESC_B_SCALE_POINTER:
        LTDESC_SET(d->scale_b);
        break;
    case CUBLASLT_MATMUL_DESC_C_SCALE_POINTER:
        LTDESC_SET(d->scale_c);
        break;
    case CUBLASLT_MATMUL_DESC_D_SCALE_POINTER:
        LTDESC_SET(d->scale_d);
        break;
    case CUBLASLT_MATMUL_DESC_AMAX_D_POINTER:
        LTDESC_SET(d->amax_d);
        break;
    default:
        break;
    }
}

void ltdesc_layout_set(struct ltdesc_layout *l, int attr, const void *buf, size_t size)
{
    switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_TYPE: {
        uint32_t t;
        if (ltdesc_read(buf, size, sizeof t, &t))
            l->type = (int32_t)t;
        break;
    }
    case CUBLASLT_MATRIX_LAYOUT_ORDER:
        LTDESC_SET(l->order);
        break;
    case CUBLASLT_MATRIX_LAYOUT_ROWS:
        LTDESC_SET(l->rows);
        break;
    case CUBLASLT_MATRIX_LAYOUT_COLS:
        LTDESC_SET(l->cols);
        break;
    case CUBLASLT_MATRIX_LAYOUT_LD:
        LTDESC_SET(l->ld);
        break;
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT:
        LTDESC_SET(l->batch_count);
        break;
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET:
        LTDESC_SET(l->batch_offset);
        break;
    default:
        break;
    }
}

const int ltdesc_matmul_attrs[] = {
    CUBLASLT_MATMUL_DESC_COMPUTE_TYPE,
    CUBLASLT_MATMUL_DESC_SCALE_TYPE,
    CUBLASLT_MATMUL_DESC_POINTER_MODE,
    CUBLASLT_MATMUL_DESC_TRANSA,
    CUBLASLT_MATMUL_DESC_TRANSB,
    CUBLASLT_MATMUL_DESC_EPILOGUE,
    CUBLASLT_MATMUL_DESC_BIAS_POINTER,
    CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE,
    CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
    CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
    CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD,
    CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE,
    CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE,
    CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
    CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
    CUBLASLT_MATMUL_DESC_C_SCALE_POINTER,
    CUBLASLT_MATMUL_DESC_D_SCALE_POINTER,
    CUBLASLT_MATMUL_DESC_AMAX_D_POINTER,
};
const size_t ltdesc_matmul_nattrs = MS_ARRAY_LEN(ltdesc_matmul_attrs);

const int ltdesc_layout_attrs[] = {
    CUBLASLT_MATRIX_LAYOUT_TYPE,
    CUBLASLT_MATRIX_LAYOUT_ORDER,
    CUBLASLT_MATRIX_LAYOUT_ROWS,
    CUBLASLT_MATRIX_LAYOUT_COLS,
    CUBLASLT_MATRIX_LAYOUT_LD,
    CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
    CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
};
const size_t ltdesc_layout_nattrs = MS_ARRAY_LEN(ltdesc_layout_attrs);
