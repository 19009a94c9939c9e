/* ltdesc: a side table of cuBLAS objects whose contents the GEMM hooks need but cannot read —
 * cuBLASLt matmul descriptors and matrix layouts (shapes, transposes, types, batch strides,
 * epilogue, bias/aux/scale pointers), and each cuBLAS handle's workspace.
 *
 * Keyed by the object's address: one open-addressed table in arena memory, lock-free (a slot
 * is claimed by compare-and-swap of its key; a destroyed object leaves a tombstone the next
 * insert may reuse). Values are plain copies: the API already requires a program to finish
 * creating or changing an object before another thread uses it, so a reader never races the
 * writer of the key it reads. A full probe window makes a put fail; the hooks then rebuild
 * the entry from the library's GetAttribute functions when they need it. */
#ifndef MEMSHIM_LTDESC_H
#define MEMSHIM_LTDESC_H

#include <stddef.h>
#include <stdint.h>

enum ltdesc_kind { LTDESC_MATMUL = 1, LTDESC_LAYOUT = 2, LTDESC_HANDLE = 3 };

struct ltdesc_layout {
    int32_t type;  /* cudaDataType */
    int32_t order; /* cublasLtOrder_t */
    uint64_t rows, cols;
    int64_t ld;
    int32_t batch_count;
    int32_t reserved;
    int64_t batch_offset; /* elements between batch members */
};

struct ltdesc_matmul {
    int32_t compute_type, scale_type, pointer_mode;
    int32_t transa, transb;
    uint32_t epilogue;
    int32_t bias_type; /* -1: D's type */
    int32_t aux_type;  /* -1: D's type */
    uint64_t bias, aux;
    int64_t bias_batch_stride;
    int64_t aux_ld, aux_batch_stride;
    uint64_t scale_a, scale_b, scale_c, scale_d, amax_d;
};

struct ltdesc_handle {
    uint64_t workspace, size;
};

union ltdesc_value {
    struct ltdesc_matmul matmul;
    struct ltdesc_layout layout;
    struct ltdesc_handle handle;
};

/* Insert or overwrite (the member of *v that `kind` names: only it is stored and read back).
 * 0, or -1 when the table has no room near the key's slot. */
int ltdesc_put(uint64_t key, enum ltdesc_kind kind, const union ltdesc_value *v);
/* 1 and a copy in *out (its member for `kind`) when `key` holds an object of `kind`. */
int ltdesc_get(uint64_t key, enum ltdesc_kind kind, union ltdesc_value *out);
/* The entry of `key` when it holds an object of `kind`, to change in place (a SetAttribute
 * changes one field: a copy out and back would cost a second search and two copies of the
 * whole value), or NULL. The API lets no other thread use an object while it is changed. */
union ltdesc_value *ltdesc_at(uint64_t key, enum ltdesc_kind kind);
/* Forget `key` (the object was destroyed). */
void ltdesc_drop(uint64_t key);
/* Forget everything (tests). */
void ltdesc_reset(void);

/* The state cublasLt*Create / *Init_internal give a new object. */
void ltdesc_matmul_init(struct ltdesc_matmul *d, int32_t compute_type, int32_t scale_type);
void ltdesc_layout_init(struct ltdesc_layout *l, int32_t type, uint64_t rows, uint64_t cols,
                        int64_t ld);
/* Apply one successful SetAttribute (attribute ids of cublasLt.h, `size` bytes at buf);
 * attributes the table does not keep are ignored. */
void ltdesc_matmul_set(struct ltdesc_matmul *d, int attr, const void *buf, size_t size);
void ltdesc_layout_set(struct ltdesc_layout *l, int attr, const void *buf, size_t size);

/* The attributes ltdesc keeps, so a miss can be rebuilt by asking the library. */
extern const int ltdesc_matmul_attrs[];
extern const size_t ltdesc_matmul_nattrs;
extern const int ltdesc_layout_attrs[];
extern const size_t ltdesc_layout_nattrs;

#endif /* MEMSHIM_LTDESC_H */
