/* The tensor view (analyze/model/tensors.h): lifetime classes of tensors inside a caching
 * allocator's segments, the split at the tensor peak, cached bytes, and the reader skipping
 * nothing it should keep. Traces are synthetic (tracegen), written to a temporary file. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tensors.h"
#include "tracegen.h"

#define POOL_ADDR 0x100000u
#define POOL_SIZE (1u << 20)

static char path[64];
static struct tracegen *g;
static uint32_t main_th, grad_th;
static uint64_t now;

static void open_trace(void)
{
    snprintf(path, sizeof path, "/tmp/memshim-tensors-XXXXXX");
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    struct tracegen_header h = {.pid = 1, .rank = MST_NO_RANK, .host = "t"};
    g = tracegen_new_file(path, &h);
    cr_assert(g);
    main_th = tracegen_thread(g, 1, "python");
    grad_th = tracegen_thread(g, 2, "pt_autograd_0");
    struct mst_rec_alloc seg = {.time_ns = ++now,
                                .addr = POOL_ADDR,
                                .size = POOL_SIZE,
                                .requested = POOL_SIZE,
                                .thread = main_th,
                                .kind = MST_KIND_CUDA_MALLOC,
                                .flags = MST_ALLOC_F_POOL};
    tracegen_alloc(g, &seg);
    /* Outside the pool: a cuBLAS handle's own workspace. */
    tracegen_malloc(g, ++now, main_th, 0x900000, 4096, MST_CAT_WORKSPACE, 0, 0);
}

static void tensor_from(uint32_t thread, uint64_t off, uint64_t size, uint8_t category,
                        uint32_t site)
{
    struct mst_rec_tensor_alloc t = {.time_ns = ++now,
                                     .addr = POOL_ADDR + off,
                                     .size = size,
                                     .requested = size,
                                     .thread = thread,
                                     .site = site,
                                     .category = category};
    tracegen_raw(g, MST_REC_TENSOR_ALLOC, &t, sizeof t);
}

static void tensor(uint32_t thread, uint64_t off, uint64_t size, uint8_t category)
{
    tensor_from(thread, off, size, category, 0);
}

static void tensor_free(uint32_t thread, uint64_t off)
{
    struct mst_rec_tensor_free f = {.time_ns = ++now, .addr = POOL_ADDR + off, .thread = thread};
    tracegen_raw(g, MST_REC_TENSOR_FREE, &f, sizeof f);
}

static void gemm(void)
{
    struct mst_rec_op op = {.time_ns = ++now, .thread = main_th, .kind = MST_OP_GEMM};
    tracegen_op(g, &op);
}

static struct tensors_peak analyze(void)
{
    cr_assert_eq(tracegen_finish(g), 0);
    tracegen_free(g);
    struct tensors_peak p;
    char err[256];
    cr_assert_eq(tensors_analyze(path, &p, err, sizeof err), 0, "%s", err);
    unlink(path);
    return p;
}

/* One training step and the start of the next, peaking in the second backward. */
Test(tensors, training_step_lifetimes)
{
    open_trace();
    tensor(main_th, 0x0000, 0x1000, 0);                /* weight */
    tensor(main_th, 0x1000, 0x200, MST_CAT_WORKSPACE); /* kept: a rule said so */
    tensor(main_th, 0x2000, 0x200, 0);                 /* input batch 1 */
    tensor(main_th, 0x3000, 0x800, 0);                 /* forward: saved for backward */
    tensor(main_th, 0x4000, 0x400, 0);                 /* forward temporary */
    tensor_free(main_th, 0x4000);
    tensor(grad_th, 0x5000, 0x1000, 0); /* backward: the weight's gradient */
    tensor(grad_th, 0x6000, 0x300, 0);  /* backward detail */
    tensor_free(grad_th, 0x6000);
    tensor_free(grad_th, 0x3000);
    tensor(main_th, 0x7000, 0x1000, 0); /* optimizer state */
    tensor_free(main_th, 0x5000);       /* zero_grad(set_to_none) */
    tensor_free(main_th, 0x2000);       /* the next batch replaces it */
    tensor(main_th, 0x2000, 0x200, 0);  /* input batch 2 */
    tensor(main_th, 0x3000, 0x800, 0);  /* forward 2 */
    tensor(grad_th, 0x5000, 0x1000, 0); /* gradient 2: the peak */
    tensor_free(grad_th, 0x3000);
    tensor(main_th, 0x8000, 0x200, 0); /* after the last backward */
    tensor_free(main_th, 0x8000);
    tensor_free(main_th, 0x2000);      /* the next batch replaces batch 2 */
    tensor(main_th, 0x2000, 0x200, 0); /* batch 3 (kept to the end: see tensors.h) */
    struct tensors_peak p = analyze();
    cr_expect_eq(p.tensors, 13);
    cr_expect_eq(p.backward_passes, 2);
    cr_expect_eq(p.by_category[MST_CAT_PARAMETER], 0x1000);
    cr_expect_eq(p.by_category[MST_CAT_WORKSPACE], 0x200);
    cr_expect_eq(p.by_category[MST_CAT_OPTIMIZER_STATE], 0x1000);
    cr_expect_eq(p.by_category[MST_CAT_ACTIVATION], 0x800);
    cr_expect_eq(p.by_category[MST_CAT_GRADIENT], 0x1000);
    cr_expect_eq(p.by_category[MST_CAT_INPUT], 0x200);
    cr_expect_eq(p.peak_bytes, 0x1000 + 0x200 + 0x1000 + 0x800 + 0x1000 + 0x200);
    cr_expect_eq(p.pool, POOL_SIZE);
    cr_expect_eq(p.cached, POOL_SIZE - p.peak_bytes);
    cr_expect_eq(p.outside[MST_CAT_WORKSPACE], 4096);
    cr_assert_eq(p.nlive, 6);
    cr_expect_eq(p.live[0].addr, POOL_ADDR);
    cr_expect_eq(p.live[0].category, MST_CAT_PARAMETER);
    cr_expect_eq(p.live[5].addr, POOL_ADDR + 0x5000);
    cr_expect_eq(p.live[5].category, MST_CAT_GRADIENT);
    tensors_peak_free(&p);
}

Test(tensors, temporaries_and_autograd_detail)
{
    open_trace();
    tensor(main_th, 0x0000, 0x100, 0);
    tensor(main_th, 0x1000, 0x4000, 0); /* a temporary, the peak */
    tensor_free(main_th, 0x1000);
    tensor(grad_th, 0x2000, 0x200, 0);
    tensor_free(grad_th, 0x2000);
    tensor(main_th, 0x3000, 0x100, 0);
    struct tensors_peak p = analyze();
    cr_expect_eq(p.by_category[MST_CAT_TEMPORARY], 0x4000);
    cr_expect_eq(p.by_category[MST_CAT_PARAMETER], 0x100);
    tensors_peak_free(&p);
}

/* Inference: no backward; what is born after the first GEMM and kept is a KV cache. */
Test(tensors, inference_kv_cache)
{
    open_trace();
    tensor(main_th, 0x0000, 0x1000, 0); /* weight */
    gemm();
    tensor(main_th, 0x1000, 0x800, 0); /* the cache, kept across rounds */
    tensor(main_th, 0x2000, 0x400, 0); /* a decode step's temporary */
    tensor_free(main_th, 0x2000);
    tensor(main_th, 0x3000, 0x10, 0);
    struct tensors_peak p = analyze();
    cr_expect_eq(p.backward_passes, 0);
    cr_expect_eq(p.by_category[MST_CAT_PARAMETER], 0x1000);
    cr_expect_eq(p.by_category[MST_CAT_KV_CACHE], 0x800);
    cr_expect_eq(p.by_category[MST_CAT_TEMPORARY], 0x400);
    tensors_peak_free(&p);
}

Test(tensors, no_tensor_records)
{
    open_trace();
    tracegen_malloc(g, ++now, main_th, 0xa00000, 100, MST_CAT_PARAMETER, 0, 0);
    struct tensors_peak p = analyze();
    cr_expect_eq(p.tensors, 0);
    cr_expect_eq(p.peak_bytes, 0);
    tensors_peak_free(&p);
}

/* Tensors outside backward count under the program's innermost line (past the framework's
 * modules), those of autograd threads under the backward() line; a site without a Python frame
 * has its own row. The tensors alive at the peak go by their innermost line. */
Test(tensors, program_lines)
{
    open_trace();
    uint32_t native = tracegen_module(g, "/opt/lib/libtorch_cuda.so", 0x7f0000000000, 0x100000);
    uint32_t train = tracegen_python_module(g, "/srv/train.py");
    uint32_t torch_py =
        tracegen_python_module(g, "/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py");
    uint32_t main_f = tracegen_frame(g, 0, train, "main", 0x8000000100000000ull | 90, 90);
    uint32_t fwd =
        tracegen_frame(g, main_f, train, "Model.forward", 0x8000000200000000ull | 12, 12);
    uint32_t lin =
        tracegen_frame(g, fwd, torch_py, "Linear.forward", 0x8000000300000000ull | 125, 125);
    uint32_t a = tracegen_frame(g, lin, native, "empty_cuda", 0x7f0000001234, 0x1234);
    uint32_t bwd = tracegen_frame(g, 0, train, "main", 0x8000000100000000ull | 95, 95);
    uint32_t b = tracegen_frame(g, bwd, native, "empty_cuda", 0x7f0000001234, 0x1234);
    uint32_t c = tracegen_frame(g, 0, native, "allocateCUDABlasWorkspace", 0x7f0000002000, 0x2000);
    tensor_from(main_th, 0x0000, 0x400, 0, a);
    tensor_from(main_th, 0x1000, 0x400, 0, a);
    tensor_from(main_th, 0x2000, 0x1000, 0, c);
    tensor_from(grad_th, 0x4000, 0x800, 0, b);
    struct tensors_peak p = analyze();
    cr_assert_eq(p.nlines, 2);
    cr_expect_null(p.program_lines[0].frame, "%s", p.program_lines[0].frame);
    cr_expect_eq(p.program_lines[0].tensors, 1);
    cr_expect_eq(p.program_lines[0].bytes, 0x1000);
    cr_assert_not_null(p.program_lines[1].frame);
    cr_expect_str_eq(p.program_lines[1].frame, "/srv/train.py:12 in Model.forward");
    cr_expect_eq(p.program_lines[1].tensors, 2);
    cr_expect_eq(p.program_lines[1].bytes, 0x800);
    cr_assert_eq(p.ncalls, 1);
    cr_expect_str_eq(p.backward_calls[0].frame, "/srv/train.py:95 in main");
    cr_expect_eq(p.backward_calls[0].tensors, 1);
    /* all four are alive at the peak: by line, the gradient's being the backward() line */
    cr_assert_eq(p.npeak_lines, 3);
    cr_expect_null(p.peak_lines[0].frame);
    cr_expect_str_eq(p.peak_lines[1].frame, "/srv/train.py:12 in Model.forward");
    cr_expect_eq(p.peak_lines[1].tensors, 2);
    cr_expect_str_eq(p.peak_lines[2].frame, "/srv/train.py:95 in main");
    cr_assert_eq(p.nlive, 4);
    cr_expect_str_eq(p.live[0].frame, "/srv/train.py:12 in Model.forward");
    cr_expect_null(p.live[2].frame);
    cr_expect(p.live[3].autograd && !p.live[0].autograd);
    cr_expect_str_eq(p.live[3].frame, "/srv/train.py:95 in main");
    tensors_peak_free(&p);
}

static void autograd_link(uint32_t thread, uint64_t off, int kind, uint64_t seq)
{
    struct mst_rec_autograd a = {
        .addr = POOL_ADDR + off, .seq = seq, .fwd_thread = 1, .thread = thread, .kind = kind};
    tracegen_raw(g, MST_REC_AUTOGRAD, &a, sizeof a);
}

/* AUTOGRAD records: a backward tensor is named by the forward line of its node's first forward
 * tensor; a node with no forward tensor, and a record for an address with no live tensor,
 * link nothing. */
Test(tensors, forward_lines)
{
    open_trace();
    uint32_t native = tracegen_module(g, "/opt/lib/libtorch_cuda.so", 0x7f0000000000, 0x100000);
    uint32_t train = tracegen_python_module(g, "/srv/train.py");
    uint32_t mm_line = tracegen_frame(g, 0, train, "Model.forward", 0x8000000200000000ull | 12, 12);
    uint32_t act_line =
        tracegen_frame(g, 0, train, "Model.forward", 0x8000000200000000ull | 13, 13);
    uint32_t mm = tracegen_frame(g, mm_line, native, "empty_cuda", 0x7f0000001234, 0x1234);
    uint32_t act = tracegen_frame(g, act_line, native, "empty_cuda", 0x7f0000001234, 0x1234);
    uint32_t bwd_line = tracegen_frame(g, 0, train, "main", 0x8000000100000000ull | 95, 95);
    uint32_t bwd = tracegen_frame(g, bwd_line, native, "empty_cuda", 0x7f0000001234, 0x1234);
    tensor_from(main_th, 0x0000, 0x400, 0, mm); /* node 7's output */
    autograd_link(main_th, 0x0000, MST_AUTOGRAD_FORWARD, 7);
    tensor_from(main_th, 0x1000, 0x400, 0, mm); /* node 7 again: not its first tensor */
    tensor_from(main_th, 0x2000, 0x400, 0, act);
    autograd_link(main_th, 0x2000, MST_AUTOGRAD_FORWARD, 9);
    autograd_link(main_th, 0x9000, MST_AUTOGRAD_FORWARD, 11); /* no tensor there */
    tensor_from(grad_th, 0x3000, 0x800, 0, bwd);              /* by node 9 */
    autograd_link(grad_th, 0x3000, MST_AUTOGRAD_BACKWARD, 9);
    tensor_from(grad_th, 0x4000, 0x200, 0, bwd); /* by node 7 */
    autograd_link(grad_th, 0x4000, MST_AUTOGRAD_BACKWARD, 7);
    tensor_from(grad_th, 0x5000, 0x100, 0, bwd); /* by node 8: a view, no forward tensor */
    autograd_link(grad_th, 0x5000, MST_AUTOGRAD_BACKWARD, 8);
    tensor_from(grad_th, 0x6000, 0x80, 0, bwd); /* no record at all */
    struct tensors_peak p = analyze();
    cr_expect_eq(p.backward, 4);
    cr_expect_eq(p.linked, 2);
    cr_assert_eq(p.nforward_lines, 3);
    cr_expect_str_eq(p.forward_lines[0].frame, "/srv/train.py:13 in Model.forward");
    cr_expect_eq(p.forward_lines[0].bytes, 0x800);
    cr_expect_str_eq(p.forward_lines[1].frame, "/srv/train.py:12 in Model.forward");
    cr_expect_eq(p.forward_lines[1].tensors, 1);
    cr_expect_null(p.forward_lines[2].frame);
    cr_expect_eq(p.forward_lines[2].tensors, 2);
    cr_assert_eq(p.nlive, 7);
    cr_expect_null(p.live[0].forward);
    cr_expect_str_eq(p.live[3].forward, "/srv/train.py:13 in Model.forward");
    cr_expect_str_eq(p.live[4].forward, "/srv/train.py:12 in Model.forward");
    cr_expect_null(p.live[5].forward);
    cr_expect_str_eq(p.live[3].frame, "/srv/train.py:95 in main");
    tensors_peak_free(&p);
}

/* Without AUTOGRAD records there are no forward lines, not a row of unlinked tensors. */
Test(tensors, no_forward_lines_without_links)
{
    open_trace();
    tensor(main_th, 0x0000, 0x400, 0);
    tensor(grad_th, 0x1000, 0x400, 0);
    struct tensors_peak p = analyze();
    cr_expect_eq(p.backward, 1);
    cr_expect_eq(p.linked, 0);
    cr_expect_eq(p.nforward_lines, 0);
    tensors_peak_free(&p);
}
