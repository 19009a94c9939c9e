/* Prices of the strategies: FLOPs, collectives, host link. See estimate_cost.h. */
#include "estimate_cost.h"

#include <string.h>

struct dims {
    double L, h, q, kv, ffn, v, t, p, b, s, accum, nd, e;
    double weights; /* matrix-multiply weights of one layer, unsharded */
};

static double elem_bytes(int dtype)
{
    return dtype == ESTIMATE_FP32 ? 4 : dtype == ESTIMATE_FP8 ? 1 : 2;
}

static struct dims dims_of(const struct estimate_config *c)
{
    struct dims d;
    double head_dim = c->head_dim ? (double)c->head_dim
                      : c->heads  ? (double)c->hidden / (double)c->heads
                                  : 0;
    d.L = (double)c->layers;
    d.h = (double)c->hidden;
    d.q = (double)c->heads * head_dim;
    d.kv = (double)(c->kv_heads ? c->kv_heads : c->heads) * head_dim;
    d.ffn = c->ffn ? (double)c->ffn : 4 * d.h;
    d.v = (double)c->vocab;
    d.t = (double)c->tp;
    d.p = (double)c->pp;
    d.b = (double)c->micro_batch;
    d.s = (double)c->seq_len;
    d.accum = (double)c->grad_accum;
    d.nd = (double)c->dp;
    d.e = elem_bytes(c->precision);
    d.weights = 2 * d.h * d.q + 2 * d.h * d.kv + (c->gated_mlp ? 3 : 2) * d.h * d.ffn;
    return d;
}

static void flops(const struct estimate_config *c, const struct dims *d, struct estimate_cost *k)
{
    double attention = 4 * d->b * d->s * d->s * d->q;
    double layer = 2 * d->b * d->s * d->weights + attention;
    double forward = d->L * layer + 2 * d->b * d->s * d->v * d->h;
    double extra = 0;
    if (c->recompute == ESTIMATE_RECOMPUTE_FULL)
        extra = d->L * layer;
    else if (c->recompute == ESTIMATE_RECOMPUTE_SELECTIVE && !c->flash)
        extra = d->L * attention; /* FlashAttention stores no scores: nothing left to redo */
    /* Tensor and pipeline parallelism split the work evenly (to first order). */
    double share = d->accum / (d->t * d->p);
    k->step_flops = (c->mode == ESTIMATE_TRAIN ? 3 : 1) * forward * share;
    k->recompute_flops = extra * share;
    k->recompute_pct = k->step_flops > 0 ? 100 * k->recompute_flops / k->step_flops : 0;
}

static void data_parallel(const struct estimate_config *c, const struct estimate_result *r,
                          const struct dims *d, struct estimate_cost *k)
{
    if (c->dp < 2 || c->mode != ESTIMATE_TRAIN)
        return;
    double psi = (double)r->params_rank, ring = (d->nd - 1) / d->nd;
    double grads = psi * r->grad_bytes, params = psi * r->param_bytes;
    switch (c->zero) {
    case 0:
        k->dp_bytes = 2 * grads;
        break;
    case 1:
        k->dp_bytes = grads + params;
        break;
    case 2:
        k->dp_bytes = grads * d->accum + params;
        break;
    default:
        k->dp_bytes = (grads + 2 * params) * d->accum;
        break;
    }
    k->dp_bytes *= ring;
}

static void activations_traffic(const struct estimate_config *c, const struct estimate_result *r,
                                const struct dims *d, struct estimate_cost *k)
{
    double bsh = d->b * d->s * d->h * d->e;
    int infer = c->mode == ESTIMATE_INFER; /* a forward pass only */
    if (c->tp > 1) {
        double collectives = infer ? 2 : c->recompute == ESTIMATE_RECOMPUTE_FULL ? 6 : 4;
        double per_layer = collectives * 2 * (d->t - 1) / d->t * bsh;
        k->tp_bytes = (double)r->layers_per_stage * per_layer * d->accum;
    }
    if (c->pp > 1)
        k->pp_bytes = (infer ? 1 : 2) * bsh / (c->sp ? d->t : 1) * d->accum;
}

static void host_link(const struct estimate_config *c, const struct estimate_result *r,
                      const struct dims *d, struct estimate_cost *k, double link_gbps)
{
    if (c->offload == ESTIMATE_OFFLOAD_NONE || c->mode != ESTIMATE_TRAIN)
        return;
    double part = (double)r->params_rank / d->nd;
    double grads = part * r->grad_bytes * d->accum, params = part * r->param_bytes;
    if (c->offload == ESTIMATE_OFFLOAD_OPTIMIZER) {
        k->link_bytes = grads + params; /* updated parameters come back once per step */
    } else {
        /* Fetched for every forward and backward; a full recompute fetches once more. */
        double fetches = c->recompute == ESTIMATE_RECOMPUTE_FULL ? 3 : 2;
        k->link_bytes = grads + fetches * params * d->accum;
    }
    if (link_gbps > 0)
        k->link_seconds = k->link_bytes / (link_gbps * 1e9);
}

void estimate_cost_compute(const struct estimate_config *c, const struct estimate_result *r,
                           double link_gbps, double tflops, struct estimate_cost *k)
{
    memset(k, 0, sizeof *k);
    struct dims d = dims_of(c);
    if (!r->has_architecture)
        d.accum = (double)c->grad_accum;
    if (r->has_architecture && c->seq_len) {
        flops(c, &d, k);
        activations_traffic(c, r, &d, k);
    }
    data_parallel(c, r, &d, k);
    host_link(c, r, &d, k, link_gbps);
    if (tflops > 0)
        k->step_seconds = (k->step_flops + k->recompute_flops) / (tflops * 1e12);
}
