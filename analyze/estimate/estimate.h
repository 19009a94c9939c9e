/* `memshim-analyze estimate`: an analytic model of the memory of one GPU training (or serving)
 * a decoder-only transformer, by category, from the published formulas:
 *
 * - model states: Rajbhandari et al., ZeRO (arXiv:1910.02054) §3 and §5: 2 + 2 + K bytes per
 *   parameter with mixed-precision Adam (K = 12), partitioned over N_d by stage 1/2/3;
 * - activations: Korthikanti et al., Reducing Activation Recomputation in Large Transformer
 *   Models (arXiv:2205.05198) §4, Table 2: s·b·h·(34 + 5·a·s/h) bytes per layer, and its
 *   tensor-parallel, sequence-parallel, selective and full recompute variants, the first
 *   pipeline stage holding L/p layers for p micro-batches, plus embeddings and output (§4.3);
 * - KV cache: 2 · layers · kv_heads · head_dim · context · batch · bytes;
 * - offload: ZeRO-Offload (arXiv:2101.06840 §4.1) keeps only the 16-bit parameters on the GPU;
 *   ZeRO-Infinity (arXiv:2104.07857) with the CPU tier moves those too, but for the layer in use.
 *
 * The README section "estimate" states every term and what is left out.
 */
#ifndef ANALYZE_ESTIMATE_H
#define ANALYZE_ESTIMATE_H

#include <stdint.h>

#include <memshim/trace_format.h>

#include "estimate_config.h"

struct estimate_result {
    int has_architecture; /* layers/hidden/heads known: activations and KV cache computed */

    /* Parameters. */
    uint64_t params_total; /* whole model */
    uint64_t params_rank;  /* held by the most loaded model-parallel rank, before ZeRO-3 */
    uint64_t layer_params; /* one transformer layer, unsharded */

    /* Per-parameter bytes before ZeRO partitioning, for the report. */
    double param_bytes, grad_bytes, optimizer_bytes;

    /* Activations. */
    uint64_t layers_per_stage; /* ceil(L / p) */
    uint64_t in_flight;        /* micro-batches the first pipeline stage holds: min(p, accum) */
    double layer_bytes;        /* one layer, one micro-batch, as stored between fwd and bwd */
    uint64_t act_layers;       /* layers_per_stage x in_flight x layer_bytes */
    uint64_t act_embedding;    /* embedding dropout mask, for in_flight micro-batches */
    uint64_t act_output;       /* final norm + output-layer input + fp32 logits (p = 1 only) */
    uint64_t act_recompute;    /* full recompute: the one layer rebuilt during backward */

    /* Model states offloaded to CPU memory by this GPU's process (not in total). */
    uint64_t host_bytes;

    /* By category (enum mst_category); total is their sum. */
    uint64_t bytes[MST_CATEGORY_MAX];
    uint64_t total;

    /* KV cache as sized: in inference mode kv_batch/kv_context default to micro_batch/seq_len. */
    uint64_t kv_batch, kv_context;

    /* Tokens. */
    uint64_t tokens_per_micro;   /* b x s */
    uint64_t tokens_per_step;    /* b x s x accumulation x dp (training) */
    double bytes_per_token;      /* total / (b x s) */
    double activation_per_token; /* activation / (in_flight x b x s) */
    uint64_t updates;            /* optimizer updates for the token budget (0: no budget) */
    uint64_t micro_steps;        /* forward+backward passes per replica for the budget */
};

/* Computes the estimate for a configuration that passed estimate_config_check(). */
void estimate_compute(const struct estimate_config *c, struct estimate_result *r);

/* The command: memshim-analyze estimate [--config FILE] [--KEY VALUE]... [--json]
 * [--trace TRACE]. Exit 0, 1 when --gpu is given and the estimate does not fit, 2 on usage
 * errors. */
int estimate_command(int argc, char **argv);

#endif /* ANALYZE_ESTIMATE_H */
