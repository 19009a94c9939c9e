/* lineage: how to recompute an allocation — the cuBLAS GEMM that last wrote all of it, kept by
 * value so that it can be replayed (MEMSHIM_POLICY=recompute; residency.h drops and restores).
 *
 * A lineage is recorded only for a GEMM through the plain cuBLAS entry points (S/D/Hgemm,
 * GemmEx, the strided batches; _64 variants) with beta = 0 read by value (host pointer mode),
 * whose C is contiguous and exactly the whole of a range the shim owns, and whose A and B are
 * tracked allocations other than C. Pointer-array batches and cuBLASLt matmuls never get one:
 * their operands are not known by value at replay time (arrays, descriptors, epilogues).
 *
 * Validity is the residency layer's business: it forgets a lineage as soon as an input may be
 * written (a recorded write or a kernel that receives its address) or freed, the output is
 * written, or the handle changes (workspace, destroy); and every lineage before a kernel the
 * shim cannot see into (its parameter layout unknown: residency_forget_lineages). Forgetting a
 * lineage whose output is dropped is allowed only after recomputing it. Equivalent to comparing
 * version numbers of the inputs, without a counter per allocation: only allocations that some
 * lineage reads matter, and lineage_may_read answers "none" for the rest in one load.
 *
 * The rule is lineage_rule; it only reads the registry. Every other function is not
 * thread-safe: they run under the residency lock. */
#ifndef MEMSHIM_LINEAGE_H
#define MEMSHIM_LINEAGE_H

#include <stddef.h>
#include <stdint.h>

#define LINEAGE_MAX_IN 2
/* Longest chain of dropped lineages one access may have to recompute (the access's own range
 * included); a victim that would make a longer chain is spilled instead of dropped. */
#define LINEAGE_MAX_DEPTH 8

/* The GEMM entry points a lineage can replay, named after them. */
enum lineage_fn {
    LINEAGE_FN_cublasSgemm_v2,
    LINEAGE_FN_cublasSgemm_v2_64,
    LINEAGE_FN_cublasDgemm_v2,
    LINEAGE_FN_cublasDgemm_v2_64,
    LINEAGE_FN_cublasHgemm,
    LINEAGE_FN_cublasHgemm_64,
    LINEAGE_FN_cublasGemmEx,
    LINEAGE_FN_cublasGemmEx_64,
    LINEAGE_FN_cublasSgemmStridedBatched,
    LINEAGE_FN_cublasSgemmStridedBatched_64,
    LINEAGE_FN_cublasGemmStridedBatchedEx,
    LINEAGE_FN_cublasGemmStridedBatchedEx_64,
    /* recorded as GEMMs, never replayed */
    LINEAGE_FN_cublasGemmBatchedEx,
    LINEAGE_FN_cublasGemmBatchedEx_64,
};

/* Every argument of the call, by value, and the handle state that decides its result. */
struct lineage_call {
    uint64_t handle, stream;
    int fn, transa, transb;
    int dt_a, dt_b, dt_c, compute, algo;
    int math_mode, has_math_mode;
    int64_t m, n, k, lda, ldb, ldc, batch;
    int64_t stride_a, stride_b, stride_c;
    uint64_t a, b, c;
    unsigned char alpha[16], beta[16];
};

struct lineage {
    struct lineage_call call;
    uint64_t out;                /* base of the output's range (== call.c) */
    uint64_t in[LINEAGE_MAX_IN]; /* bases of the input allocations, distinct */
    unsigned nin;
    uint64_t ws, ws_bytes; /* the handle's workspace when recorded (made resident to replay) */
    uint64_t flops;
    uint8_t dropped;             /* the output is a block of a chunk that is away, not kept */
    struct lineage *next, *prev; /* live list */
    struct lineage *next_free;
};

/* The rule above, for a GEMM through a plain cuBLAS entry point that has just succeeded: 1 when
 * `call` can be its output's lineage, with the bases of its input allocations in in[0..*nin).
 * scale_type: the cudaDataType of alpha and beta; host_beta_zero: beta was read by value and
 * is 0. */
int lineage_rule(const struct lineage_call *call, int scale_type, int host_beta_zero,
                 uint64_t in[LINEAGE_MAX_IN], unsigned *nin);

/* A fresh, zeroed record (not yet live); NULL when out of memory. */
struct lineage *lineage_new(void);
/* Make a filled record live (counted for lineage_may_read). */
void lineage_link(struct lineage *l);
/* Take a live record off the list and recycle it. */
void lineage_forget(struct lineage *l);
/* The live records, for walking (l->next); the walk may forget the current one only after
 * reading its next. */
struct lineage *lineage_first(void);
/* 0 when no live lineage reads the allocation at `base` (exact); 1 when one may. */
int lineage_may_read(uint64_t base);
/* 1 when l reads the allocation at `base`. */
int lineage_reads(const struct lineage *l, uint64_t base);
/* Run the call again through the real cuBLAS, on its stream, math mode and host pointer mode
 * (the handle's current ones restored after), marked as cuBLAS-internal so the hooks do not
 * record it. Queued only: the caller synchronizes. CUBLAS_STATUS_SUCCESS (0) or the error. */
int lineage_replay(const struct lineage *l);

#endif /* MEMSHIM_LINEAGE_H */
