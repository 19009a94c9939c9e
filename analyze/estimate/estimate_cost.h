/* What a memory-saving strategy costs, per GPU and per optimizer step, beside the bytes it
 * saves (estimate.h):
 *
 * - FLOPs: Narayanan et al. (arXiv:2104.04473) Eq. 3 counting, matrix multiplies only. One
 *   layer's forward is 2·b·s·W + 4·b·s²·q (W its weight count, q the query width), the logits
 *   2·b·s·V·h, and a step three forwards. Full recompute adds one forward of every layer
 *   (their 96·B·s·l·h²·(1 + s/6h + V/16lh)); selective recompute adds the attention core that
 *   Korthikanti et al. (arXiv:2205.05198 §4.2.2) recompute, QKᵀ and the product with V:
 *   4·b·s²·q per layer (none with FlashAttention, which stores no scores to drop).
 * - Data-parallel bytes sent per GPU (ZeRO arXiv:1910.02054 §7): all-reduce 2Ψ, ZeRO-1/2 a
 *   reduce-scatter of gradients and an all-gather of parameters (2Ψ), ZeRO-3 two all-gathers
 *   and a reduce-scatter (3Ψ), each times (N_d-1)/N_d. ZeRO-2 reduces every micro-batch and
 *   ZeRO-3 gathers every micro-batch, so accumulation multiplies those parts.
 * - Tensor-parallel bytes: four all-reduces of b·s·h per layer and micro-batch, 2(t-1)/t of
 *   the data each (Narayanan §3.3: 8bsh(t-1)/t elements); full recompute repeats the two of the
 *   forward. Sequence parallelism swaps each for a reduce-scatter + all-gather, same volume.
 * - Pipeline bytes: b·s·h activations forward and gradients back per micro-batch, /t when
 *   sequence parallel (the scatter/gather of Narayanan §4.1).
 * - Serving (mode = infer): one forward pass, so half the collectives and one pipeline send.
 * - Host link (offload): ZeRO-Offload (arXiv:2101.06840 §4.1) moves the 16-bit gradients to the
 *   CPU and the 16-bit parameters back: 4Ψ per step with 16-bit gradients. ZeRO-Infinity's
 *   CPU tier (arXiv:2104.07857 §4) loads the parameters for the forward and the backward and
 *   stores the gradients: 6Ψ. Each process moves its 1/N_d partition.
 */
#ifndef ANALYZE_ESTIMATE_COST_H
#define ANALYZE_ESTIMATE_COST_H

#include "estimate.h"

struct estimate_cost {
    double step_flops;      /* model FLOPs of one optimizer step on this GPU */
    double recompute_flops; /* added by recompute */
    double recompute_pct;   /* 100 · recompute / step */
    double dp_bytes;        /* data-parallel collectives, bytes sent per GPU per step */
    double tp_bytes;        /* tensor/sequence-parallel collectives */
    double pp_bytes;        /* pipeline sends */
    double link_bytes;      /* host link, both ways, per step */
    double link_seconds;    /* link_bytes at the given bandwidth */
    double step_seconds;    /* (step + recompute) FLOPs at the given rate; 0 without a rate */
};

/* Costs of the configuration `c` (checked) whose estimate is `r`, with the host link at
 * `link_gbps` GB/s and the GPU at `tflops` (0: no step time). Needs the architecture for
 * FLOPs and activation traffic; with `params` alone only the data-parallel and host-link
 * bytes are filled. */
void estimate_cost_compute(const struct estimate_config *c, const struct estimate_result *r,
                           double link_gbps, double tflops, struct estimate_cost *k);

#endif /* ANALYZE_ESTIMATE_COST_H */
