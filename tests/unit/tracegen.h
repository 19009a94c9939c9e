/* Synthetic memshim traces for tests and benchmarks: writes records exactly as
 * include/memshim/trace_format.h defines them, to memory or to a file, with helpers that
 * assign ids the way the shim does (from 1, definitions first). Nothing here validates: tests
 * build broken traces on purpose with tracegen_raw() and tracegen_bytes(). */
#ifndef TRACEGEN_H
#define TRACEGEN_H

#include <stddef.h>
#include <stdint.h>

#include <memshim/trace_format.h>

struct tracegen_header {
    uint32_t pid;
    uint32_t rank; /* MST_NO_RANK for a single process */
    const char *host;
    uint32_t stack_depth;
    uint32_t flags;
    const char *label; /* MEMSHIM_LABEL; NULL: a header without the label extension */
    int checksums;     /* a file in write-outs of 1 MiB, each after its CHECKSUM record, as the
                          shim writes it */
};

struct tracegen;

/* In memory (tracegen_data) or streamed to `path` (flushed as it grows, closed by _finish). */
struct tracegen *tracegen_new_memory(const struct tracegen_header *h);
struct tracegen *tracegen_new_file(const char *path, const struct tracegen_header *h);
/* Flushes and closes a file generator; 0 on success. The memory generator stays readable. */
int tracegen_finish(struct tracegen *g);
void tracegen_free(struct tracegen *g);
const void *tracegen_data(const struct tracegen *g, size_t *size);

/* Definitions; each returns the new id (strings, modules, frames from 1). */
uint32_t tracegen_string(struct tracegen *g, const char *text);
uint32_t tracegen_module(struct tracegen *g, const char *path, uint64_t base, uint64_t size);
/* A Python source file (MST_MODULE_F_PYTHON): its frames' module_offset is the line. */
uint32_t tracegen_python_module(struct tracegen *g, const char *path);
/* A frame node; `symbol` may be NULL (no name recorded). */
uint32_t tracegen_frame(struct tracegen *g, uint32_t parent, uint32_t module, const char *symbol,
                        uint64_t ip, uint64_t module_offset);
/* Threads are numbered from 1 too; returns the id. */
uint32_t tracegen_thread(struct tracegen *g, uint32_t os_tid, const char *name);
void tracegen_device(struct tracegen *g, uint32_t ordinal, const char *name, uint64_t total,
                     uint64_t ceiling);

/* Events. `thread` must have been defined. */
/* In the form the shim would write it: the short ALLOC when it can be. */
void tracegen_alloc(struct tracegen *g, const struct mst_rec_alloc *a);
/* The common case: synchronous cudaMalloc on device 0. */
void tracegen_malloc(struct tracegen *g, uint64_t time_ns, uint32_t thread, uint64_t addr,
                     uint64_t size, uint8_t category, uint32_t site, uint32_t phase);
/* A synchronous free, in the short FREE the shim writes for one. */
void tracegen_dealloc(struct tracegen *g, uint64_t time_ns, uint32_t thread, uint64_t addr);
void tracegen_phase(struct tracegen *g, uint64_t time_ns, uint32_t thread, uint32_t name_id,
                    int push);
void tracegen_step(struct tracegen *g, uint64_t time_ns, uint32_t thread, uint64_t step);
void tracegen_ceiling(struct tracegen *g, uint64_t time_ns, uint64_t ceiling, uint8_t policy);
void tracegen_oom(struct tracegen *g, const struct mst_rec_oom *o);
void tracegen_retag(struct tracegen *g, uint64_t time_ns, uint64_t addr, uint8_t category);
void tracegen_residency(struct tracegen *g, const struct mst_rec_residency *r);
void tracegen_summary(struct tracegen *g, const struct mst_rec_summary *s);
/* Access tracking: one OP announcing op->naccess ranges, then that many tracegen_access. */
void tracegen_op(struct tracegen *g, const struct mst_rec_op *op);
void tracegen_access(struct tracegen *g, uint64_t addr, uint64_t size, uint64_t alloc_addr,
                     uint8_t mode);
/* The link and GEMM rates the shim measures at start. */
void tracegen_measure(struct tracegen *g, uint64_t time_ns, uint64_t h2d_bytes_per_s,
                      uint64_t d2h_bytes_per_s, uint64_t gemm_flops_per_s);

/* Any record: header {kind, length = len} then `len` payload bytes. */
void tracegen_raw(struct tracegen *g, uint16_t kind, const void *payload, uint32_t len);
/* Bytes appended as they are (no record header), e.g. a torn tail. */
void tracegen_bytes(struct tracegen *g, const void *bytes, size_t len);

/* A whole synthetic training run, used by tests, the e2e generator and the benchmark. */
struct tracegen_training {
    uint32_t steps;
    uint32_t layers;
    uint64_t layer_bytes;      /* one layer's parameters; gradients match, Adam state is 2x */
    uint64_t activation_bytes; /* per layer and step */
    uint64_t temporaries;      /* short-lived allocations per layer and pass */
    int unknown;               /* record every allocation as `unknown` (exercise refinement) */
    int leak;                  /* layer 0's activation is never freed (one leak per step) */
    int oom_at_step;           /* > 0: an OOM record in that step's forward pass */
    int free_at_exit;          /* free parameters and optimizer state after the last step */
    uint64_t dt_ns;            /* time between consecutive events; 0 = 1000 */
    int accesses;              /* OP/ACCESS records: a GEMM per layer and pass, an optimizer
                                  kernel per layer (MEMSHIM_ACCESS=all) */
};

/* Writes header-level definitions and the run; the caller finishes the generator. */
void tracegen_training_run(struct tracegen *g, const struct tracegen_training *t);

#endif /* TRACEGEN_H */
