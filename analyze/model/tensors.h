/* tensors: the tensor-level view inside a framework's caching-allocator segments.
 *
 * When the trace has TENSOR_ALLOC/TENSOR_FREE records (the shim hooked PyTorch's allocator),
 * each tensor gets a category and the bytes at the moment the live tensors peaked are split:
 * tensors by category, the pool's bytes no tensor used (`cached`), and allocations made
 * outside the pool by their own categories. A tensor keeps a category the program or a rule
 * gave it (not a built-in phase guess); the others are classified by lifetime around the
 * backward passes, which are the bursts of tensor traffic on autograd threads (named
 * `pt_autograd_*` by PyTorch):
 *   born on an autograd thread, dead in the same backward          -> activation (autograd detail)
 *   born on an autograd thread, alive after that backward          -> gradient
 *   born elsewhere before the first backward, alive to the end     -> parameter
 *   born elsewhere after a backward, alive to the end              -> optimizer_state
 *   born outside a backward, dead inside one                       -> activation
 *   born and dead with no backward in between                      -> temporary
 *   born before a backward, dead after it (not inside one)         -> input
 * and, in a trace without backward passes (inference), state born after the first GEMM and
 * alive to the end (what the model keeps across forward passes, its weights being older) is
 * kv_cache. "Alive to the end": never freed, or freed in the teardown after the last tensor
 * was born. GEMMs are the OP records of access tracking (MEMSHIM_ACCESS, on by default).
 * Known confusion: the last batch of a run lives to the end like optimizer state (a few KiB
 * in the examples); a run with one step and no optimizer has no "after a backward".
 *
 * With AUTOGRAD records (the shim read PyTorch's autograd nodes), a tensor allocated by a
 * backward node is also named by the forward line of the node's operation: the program's
 * innermost line of the first tensor allocated after that node was created in forward. */
#ifndef ANALYZE_TENSORS_H
#define ANALYZE_TENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "memshim/trace_format.h"
#include "tensor_lines.h"

/* One tensor alive at the peak. */
struct tensors_live {
    uint64_t addr, size;
    uint8_t category;
    uint8_t autograd;  /* born on an autograd thread */
    const char *frame; /* the program's innermost line (a peak_lines row's), NULL: none */
    /* born by a backward node: the forward line of its operation (a forward_lines row's),
     * NULL: none or not known */
    const char *forward;
};

struct tensors_peak {
    uint64_t tensors;    /* TENSOR_ALLOC records; 0: the trace has none (nothing below set) */
    uint64_t peak_bytes; /* highest bytes in live tensors */
    uint64_t time_ns;    /* when */
    uint64_t by_category[MST_CATEGORY_MAX]; /* live tensors then, by category */
    uint64_t cached;                        /* pool bytes then that no tensor used */
    uint64_t pool;                          /* pool (segment) bytes then */
    uint64_t outside[MST_CATEGORY_MAX];     /* allocations outside the pool then */
    uint64_t backward_passes;               /* backward bursts found */
    struct tensors_live *live;              /* the tensors alive at the peak, in birth order */
    size_t nlive;
    /* Tensors born on autograd threads by the line that called backward() (pycaller_describe),
     * the others by the program's innermost line (pycaller_innermost); most bytes first, frame
     * NULL for the tensors without a Python frame. */
    struct tensor_line *backward_calls;
    size_t ncalls;
    struct tensor_line *program_lines;
    size_t nlines;
    /* The tensors alive at the peak by the program's innermost line, whatever thread made them
     * (a gradient's is the backward() line); most bytes first. */
    struct tensor_line *peak_lines;
    size_t npeak_lines;
    /* Tensors born on autograd threads by the forward line of the node that allocated them
     * (frame NULL: not linked); empty without AUTOGRAD records. Most bytes first. */
    struct tensor_line *forward_lines;
    size_t nforward_lines;
    uint64_t linked;   /* autograd-thread tensors linked to a forward line */
    uint64_t backward; /* tensors born on autograd threads */
};

/* One pass over the trace at `path`. 0 on success (tensors may be 0), -1 when it cannot be
 * read (message in err). Release with tensors_peak_free. */
int tensors_analyze(const char *path, struct tensors_peak *out, char *err, size_t errlen);
void tensors_peak_free(struct tensors_peak *p);

#endif /* ANALYZE_TENSORS_H */
